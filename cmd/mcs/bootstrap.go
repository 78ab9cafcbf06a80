package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ignition-mcs/mcs/internal/serving"
	"github.com/ignition-mcs/mcs/internal/tlsnames"
)

// bootstrapOptions are OpenShift's machine-config-server bootstrap flags.
type bootstrapOptions struct{ serving.Bootstrap }

// parseBootstrapFlags is mcs bootstrap's command line: OpenShift's
// bootstrap server as the installer's bootstrap node runs it
// (machine-config-server bootstrap --server-basedir DIR
// --bootstrap-kubeconfig FILE), serving the control plane's rendered
// configs from the installer's manifests.
func parseBootstrapFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{bootstrap: &bootstrapOptions{}, refused: bootstrapRefused}
	o, err := o.parse("mcs bootstrap", "Usage: mcs bootstrap [--server-basedir DIR] [--bootstrap-kubeconfig FILE] [flags]\n\nOpenShift's machine-config-server bootstrap, as the installer's bootstrap node runs it: serves the\nmaster and arbiter pools' rendered MachineConfigs from DIR/machine-pools and DIR/machine-configs.\n",
		args, stderr, o.bootstrap.define, o.checkBootstrap)
	if err != nil || o == nil {
		return nil, err
	}
	if err := bootstrapTLS(o); err != nil {
		return nil, err
	}
	return o, nil
}

// define defines bootstrap's own flags on fs, and OpenShift's defaults
// where they differ from mcs's.
func (bo *bootstrapOptions) define(fs *flag.FlagSet) {
	setDefault(fs, "cert", defaultCert)
	setDefault(fs, "key", defaultKey)
	setDefault(fs, "bootstrap-kubeconfig", "/etc/kubernetes/kubeconfig")
	fs.StringVar(&bo.BaseDir, "server-basedir", "/etc/mcs/bootstrap", "directory of machine-pools/, machine-configs/ and controller-config/")
	fs.Func("bootstrap-certs", "a registry CA as REGISTRY=FILE (FILE relative to --server-basedir), served as /etc/docker/certs.d/REGISTRY/ca.crt; may repeat", func(s string) error {
		if strings.Count(s, "=") != 1 || strings.HasPrefix(s, "=") || strings.HasSuffix(s, "=") {
			return errors.New("want REGISTRY=FILE")
		}
		bo.Certs = append(bo.Certs, s)
		return nil
	})
	fs.String("payload-version", "", "accepted for OpenShift's command line; logged by start only")
	fs.Int("v", 0, "accepted for OpenShift's command line; use --log-level")
}

// bootstrapRefused are mcs's flags that mcs bootstrap, which reads
// --server-basedir and no API server, refuses.
var bootstrapRefused = []string{"dir", "source", "kubeconfig", "render-mode", "controller-config", "pool-token-secrets"}

func (o *options) checkBootstrap() error {
	for _, f := range bootstrapRefused {
		if o.set[f] {
			return fmt.Errorf("--%s is not for mcs bootstrap, which reads --server-basedir", f)
		}
	}
	// As upstream's NewBootstrapServer: no kubeconfig, no server.
	if _, err := os.Stat(o.kubeconfig); err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig: %w", err)
	}
	if (o.Cert == "") != (o.Key == "") {
		return errors.New("--cert and --key go together")
	}
	return nil
}

// bootstrapTLS takes the TLS profile from the installer's APIServer
// manifest, as upstream's bootstrap server does
// (DIR/api-server/api-server.yaml: /etc/mcs/bootstrap/api-server/api-server.yaml
// by default), unless --tls-min-version or --tls-cipher-suites is given;
// without one it is Intermediate.
func bootstrapTLS(o *options) error {
	if o.set["tls-min-version"] || o.set["tls-cipher-suites"] {
		return nil
	}
	v, names, found, err := tlsnames.APIServerProfile(filepath.Join(o.bootstrap.BaseDir, "api-server", "api-server.yaml"))
	if found {
		o.tls.minVersion, o.tls.names = v, names
	}
	return err
}
