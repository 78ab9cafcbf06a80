package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/internal/daemon"
	"github.com/ignition-mcs/mcs/pki"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
)

// pkiOptions are the lifetimes and token policy of --manage-pki and of
// `mcs pki`, which must judge "due" as the controller does.
type pkiOptions struct {
	manage    bool
	lifetimes pki.Lifetimes
	tokens    pki.TokenPolicy
	resync    time.Duration
}

func pkiFlags(fs *flag.FlagSet, o *pkiOptions) {
	d := pki.DefaultLifetimes
	fs.DurationVar(&o.lifetimes.CAValidity, "pki-ca-validity", d.CAValidity, "lifetime of each machine-config-server CA")
	fs.DurationVar(&o.lifetimes.CARefresh, "pki-ca-refresh", d.CARefresh, "replace the CA this long after it starts (or at 80% of its life), cross-signed by the one it replaces")
	fs.DurationVar(&o.lifetimes.CertValidity, "pki-cert-validity", d.CertValidity, "lifetime of the serving certificate (never past its CA)")
	fs.DurationVar(&o.lifetimes.CertRefresh, "pki-cert-refresh", d.CertRefresh, "replace the serving certificate this long after it starts (or at 80% of its life)")
	cmdline.Choice(fs, (*string)(&o.lifetimes.ServingKey), "pki-serving-key", string(pki.ECDSAP256), "the serving certificate's key: ecdsa-p256 (a TLS handshake costs the server a quarter of rsa-2048's CPU) or rsa-2048, for a profile that asks for RSA; a certificate of the other kind is replaced", string(pki.ECDSAP256), string(pki.RSA2048))
	fs.DurationVar(&o.tokens.Rotation, "pool-token-rotation", 0, "keep a bearer token Secret per pool, carried by its generated pointer config, replaced this often (0: no pool tokens; HyperShift uses 5h30m)")
	fs.DurationVar(&o.tokens.Grace, "pool-token-grace", 2*time.Hour, "how long a replaced pool token keeps working")
	fs.DurationVar(&o.resync, "pki-resync", time.Minute, "how often the PKI is checked without a change seen")
}

func pkiClients(api *daemon.Clients) pki.Clients {
	return pki.Clients{Kube: api.Kube, Dynamic: api.Dynamic}
}

// startPKI is `mcs controller --manage-pki`: the PKI manager beside the
// render controller, until ctx ends or stop is called (which waits for it).
func startPKI(ctx context.Context, o pkiOptions, rc *rest.Config, log *slog.Logger, reg prometheus.Registerer) (stop func(), err error) {
	if !o.manage {
		return func() {}, nil
	}
	api, err := daemon.NewClients(rc)
	if err != nil {
		return nil, err
	}
	return pki.Start(ctx, pki.Config{Clients: pkiClients(api), Lifetimes: o.lifetimes, Tokens: o.tokens, Resync: o.resync, Logger: log, Registry: reg})
}

const pkiUsage = "Usage: mcs pki status|rotate [flags]\n\nstatus: the machine-config-server CA, bundle, serving certificate, every user-data pointer config\n(which CAs it trusts and until when it boots a node) and the pool tokens, and what the\ncontroller's next pass would change.\nrotate: a new CA now, cross-signed by the current one, and a serving certificate from it;\na dry run unless --confirm. Give the same lifetimes as the controller.\n"

// pkiCommand is one `mcs pki` verb's flags.
type pkiCommand struct {
	fs      *flag.FlagSet
	connect func() (*daemon.Clients, error)
	format  string
	confirm *bool
	o       pkiOptions
}

func newPKICommand(verb string, stderr io.Writer) *pkiCommand {
	c := &pkiCommand{fs: cmdline.NewFlagSet("mcs pki "+verb, pkiUsage, stderr)}
	c.connect = kubeconfigFlag(c.fs)
	cmdline.Choice(c.fs, &c.format, "o", "text", "output", "text", "json")
	c.confirm = c.fs.Bool("confirm", false, "rotate: replace the CA now; without it, a dry run says what would change")
	pkiFlags(c.fs, &c.o)
	return c
}

// runPKI is `mcs pki status` and `mcs pki rotate [--confirm]`.
func runPKI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb, err := verbOf("mcs pki", []string{"status", "rotate"}, args, func() *flag.FlagSet { return newPKICommand("status|rotate", stderr).fs }, stderr)
	if err != nil {
		return err
	}
	c := newPKICommand(verb, stderr)
	if err := cmdline.Parse(c.fs, args[1:]); err != nil {
		return err
	}
	connect, format, confirm, o := c.connect, c.format, c.confirm, c.o
	api, err := connect()
	if err != nil {
		return err
	}
	m, err := pki.New(pki.Config{Clients: pkiClients(api), Lifetimes: o.lifetimes, Tokens: o.tokens})
	if err != nil {
		return err
	}
	dry := verb == "status" || !*confirm
	r, err := m.Sync(ctx, verb == "rotate", dry)
	if err != nil {
		return pkiFailed(stderr, r, err, dry)
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printReport(stdout, r, dry)
	return nil
}

// pkiFailed prints the writes that landed before err, or in a dry run those
// it would have made (a failed pass's report is what it meant to write), then
// err. w is stderr, with the other errors: stdout stays JSON under -o json.
func pkiFailed(w io.Writer, r *pki.Report, err error, dry bool) error {
	printChanges(w, r, dry)
	if pki.Unfinished(err) {
		return fmt.Errorf("%w\nthe next pass of a controller managing the PKI (`mcs controller --manage-pki`) writes the rest with this CA; `mcs pki` has no command that does: `rotate --confirm` would make another CA", err)
	}
	return err
}

func printReport(w io.Writer, r *pki.Report, dry bool) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	day := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	cert := func(what string, c *pki.CertInfo) {
		if c == nil {
			fmt.Fprintf(tw, "%s\tnone\n", what)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\texpires %s\treplaced %s\t%s\n", what, c.Subject, day(c.NotAfter), day(c.ReplacedAt), strings.Join(c.Hosts, ","))
	}
	cert("CA", r.CA)
	for _, c := range r.Bundle {
		fmt.Fprintf(tw, "bundle\t%s\texpires %s\n", c.Subject, day(c.NotAfter))
	}
	cert("serving", r.Serving)
	for _, c := range r.Chain {
		fmt.Fprintf(tw, "chain\t%s signed by %s\texpires %s\n", c.Subject, c.Issuer, day(c.NotAfter))
	}
	for _, p := range r.Pointers {
		until := "does not work now"
		if !p.WorksUntil.IsZero() {
			until = "boots nodes until " + day(p.WorksUntil)
		}
		fmt.Fprintf(tw, "pointer\t%s\tspec %s\ttrusts %s\t%s\t%s\n", p.Secret, p.Version, strings.Join(p.Trusts, ", "), until, p.LeftAlone)
	}
	for _, t := range r.Tokens {
		fmt.Fprintf(tw, "token\t%s\trotated %s\tnext %s\tprevious valid until %s\n", t.Pool, day(t.RotatedAt), day(t.NextRotation), day(t.PreviousUntil))
	}
	tw.Flush()
	for _, p := range r.Problems {
		fmt.Fprintln(w, "problem:", p)
	}
	printChanges(w, r, dry)
}

func printChanges(w io.Writer, r *pki.Report, dry bool) {
	verb := map[bool]string{false: "changed:", true: "would change:"}[dry]
	for i := 0; r != nil && i < len(r.Changes); i++ {
		fmt.Fprintln(w, verb, r.Changes[i])
	}
}
