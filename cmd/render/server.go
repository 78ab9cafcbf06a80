package main

import (
	"flag"
	"fmt"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/skewgate"
)

// serverFlags are mcs's flags that shape what it serves beside the render,
// so that `render --client` and `render diff` answer as mcs would.
type serverFlags struct {
	skewPolicy, defaultSpec, kubeconfig, kubeletCA string
}

func (f *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.skewPolicy, "skew-policy", "", "boot-image skew policy `FILE`, as mcs --skew-policy reads it")
	fs.StringVar(&f.defaultSpec, "default-spec", "", "spec for clients whose Accept names no Ignition type, as mcs --default-spec")
	fs.StringVar(&f.kubeconfig, "bootstrap-kubeconfig", "", "node bootstrap kubeconfig `FILE` served as /etc/kubernetes/kubeconfig, as mcs's")
	fs.StringVar(&f.kubeletCA, "kubelet-ca", "", "CA bundle `FILE` served as /etc/kubernetes/kubelet-ca.crt, as mcs's")
}

// check reads what the flags name, for a usage error before any render.
func (f *serverFlags) check() (*skewgate.Policy, convert.Version, error) {
	var p *skewgate.Policy
	var v convert.Version
	var err error
	if f.skewPolicy != "" {
		if p, err = skewgate.LoadPolicy(f.skewPolicy); err != nil {
			return nil, v, fmt.Errorf("--skew-policy: %w", err)
		}
	}
	if f.defaultSpec != "" {
		if v, err = convert.ParseOutputVersion(f.defaultSpec); err != nil {
			return nil, v, fmt.Errorf("--default-spec: %w", err)
		}
	}
	return p, v, nil
}

// server is an mcs server holding one snapshot of results, answering in
// memory (serve.Server.Answer): its negotiation, skew gate and bytes.
func (f *serverFlags) server(set *render.Set, results []*render.Result) (*serve.Server, error) {
	policy, defaultSpec, err := f.check()
	if err != nil {
		return nil, err
	}
	nf, err := serve.ReadNodeFiles(f.kubeconfig, f.kubeletCA)
	if err != nil {
		return nil, err
	}
	snap, err := serve.BuildSnapshot(1, results, set.ControllerConfig(), nf)
	if err != nil {
		return nil, err
	}
	srv := serve.New(serve.Config{DefaultSpec: defaultSpec, Gate: skewgate.New(policy, nil), Source: "render"})
	srv.Swap(snap)
	return srv, nil
}
