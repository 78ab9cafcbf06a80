package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ignition-mcs/mcs/internal/syncbuf"
)

// Commands run in this binary do not install main's log bridge (klogbridge):
// controller-runtime's certwatcher would complain on stderr of a root
// logger never set.
func init() { ctrllog.SetLogger(logr.Discard()) }

// instance is a running mcs (run() in a goroutine) for end-to-end tests.
type instance struct {
	t      testing.TB
	base   string
	cancel context.CancelFunc
	done   chan error
	stderr *syncbuf.Buffer
	stdout *syncbuf.Buffer
}

func start(t testing.TB, args ...string) *instance {
	t.Helper()
	return launch(t, true, func(ctx context.Context, stdout, stderr io.Writer) error { return run(ctx, args, nil, stdout, stderr) })
}

// launch runs main's f until the test ends, and waits for its listener
// when it has one.
func launch(t testing.TB, listens bool, f func(ctx context.Context, stdout, stderr io.Writer) error) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{t: t, cancel: cancel, done: make(chan error, 1), stderr: &syncbuf.Buffer{}, stdout: &syncbuf.Buffer{}}
	go func() { in.done <- f(ctx, in.stdout, in.stderr) }()
	if listens {
		waitFor(t, "listening", func() bool {
			select {
			case err := <-in.done: // not listening ever: say why now
				t.Fatalf("mcs ended before it listened: %v\n%s", err, in.stderr.String())
			default:
			}
			m := listening.FindStringSubmatch(in.stdout.String())
			if m != nil {
				in.base = m[1]
			}
			return m != nil
		})
	}
	t.Cleanup(func() { in.stop() })
	return in
}

func (in *instance) stop() error {
	in.cancel()
	select {
	case err := <-in.done:
		in.done <- err
		return err
	case <-time.After(15 * time.Second):
		in.t.Fatal("mcs did not stop")
		return nil
	}
}

func (in *instance) get(path string, header ...string) (int, []byte, error) {
	return getWith(http.DefaultClient, in.base+path, header...)
}

// getWith GETs url with c, header holding name, value pairs, and reads
// the whole body.
func getWith(c *http.Client, url string, header ...string) (int, []byte, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func writeFile(t testing.TB, dir, name, body string) {
	t.Helper()
	// Write then rename, as a careful tool would; the reloader must also cope
	// with plain writes, which other tests do.
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func mc(name, marker string) string {
	return helloMC(name, "/etc/"+name, marker, nil)
}
