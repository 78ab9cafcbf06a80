package main

import (
	"flag"
	"fmt"

	"github.com/ignition-mcs/mcs/cmd/internal/cmdline"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
)

// serverFlags are mcs's flags that shape what it serves beside the render,
// so that `render --client` and `render diff` answer as mcs would.
type serverFlags struct {
	skewPolicy, kubeconfig, kubeletCA string
	defaultSpec                       convert.Version
}

func (f *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.skewPolicy, "skew-policy", "", "boot-image skew policy `FILE`, as mcs --skew-policy reads it")
	fs.Var(cmdline.Version(&f.defaultSpec), "default-spec", "spec `VERSION` for clients whose Accept names no Ignition type, as mcs --default-spec")
	fs.StringVar(&f.kubeconfig, "bootstrap-kubeconfig", "", "node bootstrap kubeconfig `FILE` served as /etc/kubernetes/kubeconfig, as mcs's")
	fs.StringVar(&f.kubeletCA, "kubelet-ca", "", "CA bundle `FILE` served as /etc/kubernetes/kubelet-ca.crt, as mcs's")
}

// check reads what the flags name, for a usage error before any render.
func (f *serverFlags) check() (*skewgate.Policy, error) {
	if f.skewPolicy == "" {
		return nil, nil
	}
	p, err := skewgate.LoadPolicy(f.skewPolicy)
	if err != nil {
		return nil, fmt.Errorf("--skew-policy: %w", err)
	}
	return p, nil
}

// server is an mcs server holding one snapshot of results, answering in
// memory (serve.Server.Answer): its negotiation, skew gate and bytes.
func (f *serverFlags) server(set *render.Set, results []*render.Result) (*serve.Server, error) {
	policy, err := f.check()
	if err != nil {
		return nil, err
	}
	nf, err := cmdline.NodeFiles(f.kubeconfig, f.kubeletCA)
	if err != nil {
		return nil, err
	}
	snap, err := pipeline.BuildSnapshot(1, results, set.ControllerConfig(), nf)
	if err != nil {
		return nil, err
	}
	srv, err := serve.New(serve.Config{DefaultSpec: f.defaultSpec, Gate: skewgate.New(policy, nil), Source: "render"})
	if err != nil {
		return nil, err
	}
	srv.Swap(snap)
	return srv, nil
}
