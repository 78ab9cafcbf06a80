package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/tree"
)

// OpenShift's machine-config-server, run beside mcs at the same storm
// and reported, never gated: it is what mcs replaces, built from its own
// source, never committed here.
const (
	mcoRepo  = "https://github.com/openshift/machine-config-operator"
	mcoHowTo = "no OpenShift machine-config-server given: -mco-src DIR (a git clone of " + mcoRepo +
		"; make storm STORM_MCO_SRC=DIR) or -mco-bin FILE (docs/performance.md)"
	// mcoPool is the pool its nodes fetch: in bootstrap mode it serves
	// only master and arbiter, so the storm's pool's render is written
	// there as master's.
	mcoPool = "master"
	// Its ports, fixed in the private network namespace.
	mcoSecurePort, mcoInsecurePort = "22623", "22624"
)

func (o options) mco() bool { return o.mcoSrc != "" || o.mcoBin != "" }

// buildMCO builds src's cmd/machine-config-server into dir with the
// tree's vendored modules (no network).
func buildMCO(ctx context.Context, src, dir string, stdout io.Writer) (string, error) {
	out := filepath.Join(dir, "machine-config-server")
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-mod=vendor", "-o", out, "./cmd/machine-config-server")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		if b = bytes.TrimSpace(b); len(b) > 0 {
			err = fmt.Errorf("%w:\n%s", err, b)
		}
		return "", fmt.Errorf("building %s: %w", filepath.Join(src, "cmd/machine-config-server"), err)
	}
	fmt.Fprintf(stdout, "mco: built %s in %s\n", filepath.Join(src, "cmd/machine-config-server"), time.Since(start).Round(time.Second))
	return out, nil
}

// revision is the source revision Go recorded in bin, or why none.
func revision(bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "revision unknown: " + err.Error()
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return "revision unknown: not built in a git checkout, " + bi.GoVersion
	}
	return "revision " + rev + modified + ", " + bi.GoVersion
}

// addMCO starts OpenShift's server when o gives one and it is in a
// private network namespace; otherwise, or when it fails, it says why on
// stdout and returns nil: the storm goes on without it.
func addMCO(ctx context.Context, o options, f *fixture, mcs *target, stdout io.Writer) *target {
	if !o.mco() {
		fmt.Fprintf(stdout, "mco: skipped: %s\n", mcoHowTo)
		return nil
	}
	t, err := startMCO(ctx, o, f, mcs, stdout)
	if err != nil {
		if t != nil {
			t.stop()
		}
		fmt.Fprintf(stdout, "mco: skipped: %v\n", err)
		return nil
	}
	return t
}

// startMCO runs `machine-config-server bootstrap` (what the installer's
// bootstrap node runs) on the storm's certificate, over a base directory
// holding the storm's pool's render, and records its answer to each era.
func startMCO(ctx context.Context, o options, f *fixture, mcs *target, stdout io.Writer) (*target, error) {
	if !o.inNetns {
		return nil, errors.New("not in a private network namespace")
	}
	base := filepath.Join(f.dir, "mco")
	name, err := writeMCOBase(base, o.tree, o.pool, f)
	if err != nil {
		return nil, err
	}
	logFile := filepath.Join(f.dir, "mco.log")
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, o.mcoBin, "bootstrap", "--server-basedir", base,
		"--bootstrap-kubeconfig", filepath.Join(base, "kubeconfig"), "--cert", f.certFile, "--key", f.keyFile,
		"--secure-port", mcoSecurePort, "--insecure-port", mcoInsecurePort)
	// Its log (a few lines a request, at its default level, as it
	// runs) goes to a file: its cost is part of its storm.
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mco: %w", err)
	}
	t := &target{name: "mco", addr: "127.0.0.1:" + mcoSecurePort, cmd: cmd, pool: mcoPool, reportOnly: true,
		exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(t.exited) }()
	if err := waitMCO(ctx, f, t, o.timeout); err != nil {
		return t, fmt.Errorf("%w (its log: %s)", err, tail(logFile))
	}
	responses, err := record(f, t, o)
	if err != nil {
		return t, fmt.Errorf("%w (its log: %s)", err, tail(logFile))
	}
	fmt.Fprintf(stdout, "mco: OpenShift's machine-config-server bootstrap (%s), pool %s serving %s, no token checked\n",
		revision(o.mcoBin), mcoPool, name)
	t.eras = []era{}
	for i, r := range responses {
		e := o.eras[i]
		if r.Status != "200 OK" {
			fmt.Fprintf(stdout, "mco: %-8s (Accept %s) answered %s: left out of its storm (its log: %s)\n", e.version, e.accept, r.Status, lastError(logFile))
			continue
		}
		t.eras, t.want = append(t.eras, e), append(t.want, r.Body)
		fmt.Fprintf(stdout, "mco: %-8s gets spec %s, %d bytes (mcs: spec %s, %d bytes)\n", e.version,
			specOf(r.Body), len(r.Body), specOf(mcs.want[i]), len(mcs.want[i]))
	}
	if len(t.eras) == 0 {
		return t, errors.New("mco answered no era with 200")
	}
	return t, nil
}

// waitMCO waits for its /healthz on the TLS port.
func waitMCO(ctx context.Context, f *fixture, t *target, timeout time.Duration) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(f.caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get("https://" + t.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-t.exited:
			return fmt.Errorf("mco exited: %v", t.cmd.ProcessState)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mco not healthy after %s: %v", timeout, err)
		}
	}
}

// writeMCOBase writes the bootstrap server's base directory: pool's
// render (as mcs renders it from tr) as machine-configs/NAME.yaml,
// machine-pools/master.yaml pointing at it, the tree's ControllerConfig's
// CA bundles, and a kubeconfig on the storm's CA. It returns NAME.
func writeMCOBase(base, tr, pool string, f *fixture) (string, error) {
	set, err := tree.Load(tr)
	if err != nil {
		return "", fmt.Errorf("loading %s: %w", tr, err)
	}
	r, err := set.RenderPool(pool, render.Options{})
	if err != nil {
		return "", fmt.Errorf("rendering %s of %s: %w", pool, tr, err)
	}
	mc, err := r.MachineConfig.MarshalRendered()
	if err != nil {
		return "", err
	}
	mcp, err := json.Marshal(map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]any{"name": mcoPool}, "spec": map[string]any{},
		"status": map[string]any{"configuration": map[string]any{"name": r.Name}}})
	if err != nil {
		return "", err
	}
	ccSpec := map[string]any{}
	if cc := set.ControllerConfig(); cc != nil {
		ccSpec["kubeAPIServerServingCAData"] = cc.KubeAPIServerServingCAData
		ccSpec["cloudProviderCAData"] = cc.CloudProviderCAData
	}
	cc, err := json.Marshal(map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfig",
		"metadata": map[string]any{"name": "machine-config-controller"}, "spec": ccSpec})
	if err != nil {
		return "", err
	}
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: storm\n  cluster:\n" +
		"    server: https://api-int.storm.invalid:6443\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(f.caPEM) + "\n" +
		"contexts:\n- name: kubelet\n  context:\n    cluster: storm\n    user: kubelet\ncurrent-context: kubelet\n" +
		"users:\n- name: kubelet\n  user:\n    token: " + f.token + "\n"
	for file, b := range map[string][]byte{
		filepath.Join("machine-configs", r.Name+".yaml"):                     mc,
		filepath.Join("machine-pools", mcoPool+".yaml"):                      mcp,
		filepath.Join("controller-config", "machine-config-controller.yaml"): cc,
		"kubeconfig": []byte(kubeconfig),
	} {
		p := filepath.Join(base, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return "", err
		}
	}
	return r.Name, nil
}

// specOf is the Ignition spec a config says it is written at.
func specOf(config []byte) string {
	var c struct {
		Ignition struct{ Version string } `json:"ignition"`
	}
	if err := json.Unmarshal(config, &c); err != nil || c.Ignition.Version == "" {
		return "?"
	}
	return c.Ignition.Version
}

// lastError is the last error line (klog's "E…") of a log file.
func lastError(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "E") {
			return lines[i]
		}
	}
	return "no error logged"
}

// tail is the end of a log file, on one line.
func tail(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	b = b[max(0, len(b)-600):]
	return strings.Join(strings.Fields(string(b)), " ")
}
