package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/ignition-mcs/mcs/impact"
	"github.com/ignition-mcs/mcs/render"
)

// answerClient writes what mcs would answer the client (--client, --accept)
// for the one pool rendered: the body byte for byte, the config or the skew
// stub; stderr says which.
func answerClient(ctx context.Context, o options, set *render.Set, results []*render.Result, stdout, stderr io.Writer) error {
	if len(results) != 1 {
		err := errors.New("--client answers for one pool: choose it with --pool")
		fmt.Fprintf(stderr, "render: %v\n", err)
		return fail(exitUsage, err)
	}
	pool := results[0].Pool
	srv, err := o.server.server(set, results)
	if err != nil {
		fmt.Fprintf(stderr, "render: %v\n", err)
		return fail(exitInvalid, err)
	}
	h := impact.ClientHeader(o.client, o.accept)
	out, body := impact.Ask(ctx, srv, pool, h)
	who := fmt.Sprintf("%s (Accept: %s)", o.client, h.Get("Accept"))
	if out.Status != http.StatusOK {
		fmt.Fprintf(stderr, "render: mcs answers %s for pool %s with HTTP %d: %s", who, pool, out.Status, body)
		code := exitInvalid
		if out.Status == http.StatusNotAcceptable {
			code = exitCeiling
		}
		return fail(code, fmt.Errorf("HTTP %d", out.Status))
	}
	if err := writeOut(o.out, body, stdout); err != nil {
		fmt.Fprintf(stderr, "render: %v\n", err)
		return fail(exitInvalid, err)
	}
	if out.Admitted {
		fmt.Fprintf(stderr, "render: %s gets pool %s's config (%s) at spec %s\n", who, pool, results[0].Name, out.Spec)
		return nil
	}
	fmt.Fprintf(stderr, "render: %s gets the skew stub at spec %s (%s): it cannot join pool %s\n", who, out.Spec, out.Reason, pool)
	if slices.Contains(o.failOn, "era-loss") {
		return fail(exitFailOn, errors.New("era-loss holds"))
	}
	return nil
}

// writeOut writes to stdout, or atomically to a file.
func writeOut(path string, b []byte, stdout io.Writer) error {
	if path != "" {
		return writeAtomic(path, b)
	}
	_, err := stdout.Write(b)
	return err
}
