package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ignition-mcs/mcs/internal/serving"
	"github.com/ignition-mcs/mcs/source/kube"
)

// startOptions are OpenShift's machine-config-server start flags that mcs
// has no flag of its own for.
type startOptions struct {
	serving.Start
	verbosity int
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
	o := &options{start: &startOptions{}, refused: startRefused}
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
	fs.StringVar(&so.APIServerURL, "apiserver-url", "", "URL of the API server written into the kubeconfig served to nodes (required)")
	fs.StringVar(&so.PayloadVersion, "payload-version", "", "the OpenShift release's version (logged)")
	fs.StringVar(&so.TokenDir, "bootstrap-token-dir", defaultTokenDir, "directory of the node-bootstrapper token (token, ca.crt) put into the served kubeconfig")
	fs.IntVar(&so.verbosity, "v", 0, "klog verbosity as OpenShift's DaemonSet sets it: 4 or more logs at debug unless --log-level is given")
	fs.String("vmodule", "", "accepted for OpenShift's command line; ignored")
	fs.Bool("logtostderr", true, "accepted for OpenShift's command line; mcs always logs to stderr")
	fs.Lookup("poll").Usage = "how often the files of --bootstrap-token-dir are checked for changes"
}

// setDefault changes a defined flag's default, as --help shows it too.
func setDefault(fs *flag.FlagSet, name, value string) {
	f := fs.Lookup(name)
	_ = f.Value.Set(value)
	f.DefValue = value
}

// startRefused are mcs's flags that mcs start, which reads the cluster,
// refuses: those of --source dir, and a fixed node kubeconfig.
var startRefused = []string{"dir", "source", "bootstrap-kubeconfig", "max-file-size", "max-tree-size"}

func (o *options) checkStart() error {
	if o.Source != "kube" {
		return errors.New("mcs start reads the cluster: --source must be kube")
	}
	for _, f := range startRefused {
		if o.set[f] && f != "source" {
			return fmt.Errorf("--%s is not for mcs start, which reads the cluster and builds the node kubeconfig from --bootstrap-token-dir and --apiserver-url", f)
		}
	}
	if o.start.APIServerURL == "" {
		return errors.New("--apiserver-url is required: the URL nodes reach the API server at (OpenShift's: https://api-int.<cluster domain>:6443, the Infrastructure object's status.apiServerInternalURI)")
	}
	if err := checkAPIServerURL(o.start.APIServerURL); err != nil {
		return fmt.Errorf("--apiserver-url %s: %w", o.start.APIServerURL, err)
	}
	if err := checkTokenDir(o.start.TokenDir); err != nil {
		return fmt.Errorf("--bootstrap-token-dir %s: %w", o.start.TokenDir, err)
	}
	if o.start.verbosity >= 4 && !o.set["log-level"] {
		o.log.level = "debug"
	}
	return o.check()
}

// checkAPIServerURL refuses a URL nodes could not use (see
// kube.CheckAPIServerURL), saying where this cluster's is.
func checkAPIServerURL(s string) error {
	err := kube.CheckAPIServerURL(s)
	if errors.Is(err, kube.ErrPlaceholder) {
		return fmt.Errorf("%w: give this cluster's (oc get infrastructure cluster -o jsonpath='{.status.apiServerInternalURI}'), or let mcs cutover apply copy it from OpenShift's DaemonSet", err)
	}
	return err
}

// checkTokenDir refuses a token directory without the token: mcs start
// builds every node's kubeconfig from it.
func checkTokenDir(dir string) error {
	if err := kube.CheckTokenDir(dir); err != nil {
		return fmt.Errorf("%w: mcs start builds the node kubeconfig from its token and ca.crt (OpenShift's DaemonSet mounts Secret %s/node-bootstrapper-token there)",
			err, kube.MCONamespace)
	}
	return nil
}
