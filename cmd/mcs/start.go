package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/source"
	"github.com/ignition-mcs/mcs/source/kube"
)

// startOptions are OpenShift's machine-config-server start flags that mcs
// has no flag of its own for.
type startOptions struct {
	apiserverURL   string
	payloadVersion string
	tokenDir       string
	verbosity      int
}

// Where OpenShift's DaemonSet mounts the serving certificate and the
// node-bootstrapper token (manifests/machineconfigserver/daemonset.yaml).
const (
	defaultCert     = "/etc/ssl/mcs/tls.crt"
	defaultKey      = "/etc/ssl/mcs/tls.key"
	defaultTokenDir = "/etc/mcs/bootstrap-token"
	defaultAdmin    = "127.0.0.1:22626"
)

// parseStartFlags is mcs start's command line: the server as OpenShift's
// DaemonSet runs its own (machine-config-server start --apiserver-url=…
// --payload-version=… --tls-cipher-suites=… --tls-min-version=… --v=N), so
// that only the image changes. It serves each pool's rendered MachineConfig as the cluster
// names it, with the node kubeconfig built from the token and the URL.
func parseStartFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{start: &startOptions{}}
	usage := fmt.Sprintf("Usage: mcs start --apiserver-url URL [flags]\n\nOpenShift's machine-config-server start, as its DaemonSet runs it: serves each pool's rendered\nMachineConfig on :22623 (TLS, %s) and :22624, with the node kubeconfig built from\n%s and --apiserver-url, its CA from ConfigMap %s/%s; /status and /metrics\non --listen-admin (%s) only.\n",
		defaultCert, defaultTokenDir, kube.MCONamespace, kube.KubeconfigDataName, defaultAdmin)
	return o.parse("mcs start", usage, args, stderr, o.start.define, o.checkStart)
}

// define defines start's own flags on fs, and OpenShift's defaults where
// they differ from mcs's.
func (so *startOptions) define(fs *flag.FlagSet) {
	setDefault(fs, "cert", defaultCert)
	setDefault(fs, "key", defaultKey)
	setDefault(fs, "source", "kube")
	setDefault(fs, "render-mode", string(kube.ModePool))
	// The node ports serve /config/ and the probes only, as OpenShift's
	// server; /status and /metrics name pools, renders and node addresses.
	setDefault(fs, "listen-admin", defaultAdmin)
	fs.StringVar(&so.apiserverURL, "apiserver-url", "", "URL of the API server written into the kubeconfig served to nodes (required)")
	fs.StringVar(&so.payloadVersion, "payload-version", "", "the OpenShift release's version (logged)")
	fs.StringVar(&so.tokenDir, "bootstrap-token-dir", defaultTokenDir, "directory of the node-bootstrapper token (token, ca.crt) put into the served kubeconfig")
	fs.IntVar(&so.verbosity, "v", 0, "klog verbosity as OpenShift's DaemonSet sets it: 4 or more logs at debug unless --log-level is given")
	fs.String("vmodule", "", "accepted for OpenShift's command line; ignored")
	fs.Bool("logtostderr", true, "accepted for OpenShift's command line; mcs always logs to stderr")
}

// setDefault changes a defined flag's default, as --help shows it too.
func setDefault(fs *flag.FlagSet, name, value string) {
	f := fs.Lookup(name)
	_ = f.Value.Set(value)
	f.DefValue = value
}

func (o *options) checkStart() error {
	for _, f := range []string{"dir", "bootstrap-kubeconfig"} {
		if o.set[f] {
			return fmt.Errorf("--%s is not for mcs start, which reads the cluster and builds the node kubeconfig from --bootstrap-token-dir and --apiserver-url", f)
		}
	}
	if o.source != "kube" {
		return errors.New("mcs start reads the cluster: --source must be kube")
	}
	if o.start.apiserverURL == "" {
		return errors.New("--apiserver-url cannot be empty")
	}
	if o.start.verbosity >= 4 && !o.set["log-level"] {
		o.log.level = "debug"
	}
	return o.check()
}

// startSource is, for mcs start, the kube source reading what OpenShift's
// server reads (kubeconfig-data, the image-mode objects), and a wrapper that
// also signals when the token files change, so a rotated token reaches the
// next node without a restart. Without start it is src unchanged.
func startSource(o *options, src source.Source, log *slog.Logger) source.Source {
	if o.start == nil {
		return src
	}
	log.Info("mcs start", "apiserverURL", o.start.apiserverURL, "payloadVersion", o.start.payloadVersion, "tokenDir", o.start.tokenDir)
	return &filesWatched{Source: src, paths: tokenFiles(o.start.tokenDir), every: o.poll}
}

func tokenFiles(dir string) []string {
	return []string{filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")}
}

// filesWatched is a source that also signals a change when one of paths
// changes (size, time or presence), checked every every.
type filesWatched struct {
	source.Source
	paths []string
	every time.Duration
}

func (f *filesWatched) Watch(ctx context.Context, changed chan<- struct{}) {
	go f.Source.Watch(ctx, changed)
	stamp := func() string { return stamps(f.paths) }
	source.Poll(ctx, max(f.every, 100*time.Millisecond), stamp(), stamp, changed)
}

// stamps is the size and modification time of each path (following
// symlinks, as a Secret volume's files are).
func stamps(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil {
			b.WriteString(strconv.FormatInt(info.Size(), 10) + " " + strconv.FormatInt(info.ModTime().UnixNano(), 10))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
