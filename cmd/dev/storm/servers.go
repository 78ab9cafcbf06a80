package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// target is a running server the nodes fetch from.
type target struct {
	name  string
	addr  string // host:port
	cmd   *exec.Cmd
	gated bool // its figures count against the goals
	// reportOnly: a server shown beside the others (OpenShift's) that
	// nothing is compared with; when it fails, the run goes on without it.
	reportOnly bool
	// want is the body each era must get (by era index); nil: not checked.
	want [][]byte
	// pool is the pool its nodes fetch, when not the storm's.
	pool string
	// eras are its nodes' eras, when not all the storm's: those it
	// answers (OpenShift's server answers some with an error).
	eras []era
	// exited, when set, is closed once cmd has been waited for.
	exited chan struct{}
}

func (t *target) pid() int { return t.cmd.Process.Pid }

// path is what its nodes fetch.
func (t *target) path(o options) string {
	if t.pool != "" {
		return "/config/" + t.pool
	}
	return "/config/" + o.pool
}

func (t *target) erasOf(o options) []era {
	if t.eras != nil {
		return t.eras
	}
	return o.eras
}

func (t *target) stop() {
	if t.cmd.Process == nil {
		return
	}
	_ = t.cmd.Process.Kill()
	if t.exited != nil {
		<-t.exited
		return
	}
	_ = t.cmd.Wait()
}

// startServers starts mcs, records its answer to each era, then starts the
// bare server with those answers.
// cleanup stops whatever started, also on an error.
func startServers(ctx context.Context, o options, f *fixture) ([]*target, func(), error) {
	var started []*target
	cleanup := func() {
		for _, t := range started {
			t.stop()
		}
	}
	mcs, admin, err := start(ctx, "mcs", o.timeout, o.mcs, "--dir", o.tree, "--listen-plain", "", "--listen-tls", "127.0.0.1:0",
		"--listen-admin", "127.0.0.1:0", "--cert", f.certFile, "--key", f.keyFile, "--auth-token-file", f.tokenFile, "--log-level", "warn")
	if mcs != nil {
		started = append(started, mcs)
	}
	if err != nil {
		return nil, cleanup, err
	}
	mcs.gated = true
	if err := waitReady(ctx, "http://"+admin+"/readyz", o.timeout); err != nil {
		return nil, cleanup, fmt.Errorf("mcs: %w", err)
	}
	responses, err := record(f, mcs, o)
	if err != nil {
		return nil, cleanup, err
	}
	if why := notOK(mcs, responses, o.eras); why != "" {
		return nil, cleanup, errors.New(why)
	}
	for _, r := range responses {
		mcs.want = append(mcs.want, r.Body)
	}
	bare, err := startBare(ctx, o, f, responses)
	if bare != nil {
		started = append(started, bare)
	}
	if err != nil {
		return nil, cleanup, err
	}
	bare.want = mcs.want
	return started, cleanup, nil
}

func startBare(ctx context.Context, o options, f *fixture, responses []response) (*target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	file := filepath.Join(f.dir, "responses.json")
	b, err := json.Marshal(responses)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return nil, err
	}
	t, _, err := start(ctx, "bare", o.timeout, self, "bare", "-responses", file, "-cert", f.certFile, "-key", f.keyFile, "-token", f.tokenFile)
	return t, err
}

var listening = regexp.MustCompile(`listening on (https?)://(\S+)`)

// start runs a server and waits for it to print its addresses: the TLS
// one, and a plain one (mcs's admin listener) if it prints it.
func start(ctx context.Context, name string, timeout time.Duration, bin string, args ...string) (*target, string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	t := &target{name: name, cmd: cmd}
	found := make(chan [2]string, 1)
	go func() {
		var tlsAddr, plain string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			m := listening.FindStringSubmatch(sc.Text())
			switch {
			case m == nil:
			case m[1] == "https":
				tlsAddr = strings.TrimSuffix(m[2], "/")
			default:
				plain = m[2]
			}
			if tlsAddr != "" && (plain != "" || name != "mcs") {
				break
			}
		}
		found <- [2]string{tlsAddr, plain}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-found:
		if a[0] == "" {
			return t, "", fmt.Errorf("%s printed no TLS address", name)
		}
		t.addr = a[0]
		return t, a[1], nil
	case <-time.After(timeout):
		return t, "", fmt.Errorf("%s: no address after %s", name, timeout)
	}
}

func waitReady(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not ready after %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// record asks t once as each era does and keeps the answers: the bytes
// every node must get, and for mcs those the bare server writes. It also
// makes mcs encode each era's spec before the storm, as a server up for a
// while has.
func record(f *fixture, t *target, o options) ([]response, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(f.caPEM) {
		return nil, errors.New("no CA")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: o.timeout}
	defer client.CloseIdleConnections()
	var out []response
	for _, e := range o.eras {
		path := t.path(o)
		req, _ := http.NewRequest(http.MethodGet, "https://"+t.addr+path, nil)
		setHeaders(req.Header, e, f.token)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		h := resp.Header.Clone()
		h.Del("Date")
		out = append(out, response{Path: path, Accept: e.accept, Header: h, Body: body, Status: resp.Status})
	}
	return out, nil
}

// notOK is the first answer of responses (one per era of eras) that is
// not a 200, in words, or "".
func notOK(t *target, responses []response, eras []era) string {
	for i, r := range responses {
		if r.Status != "200 OK" {
			return fmt.Sprintf("%s answered %s (%s) %s: %s %.200s", t.name, eras[i].version, eras[i].accept, r.Path, r.Status, r.Body)
		}
	}
	return ""
}

func setHeaders(h http.Header, e era, token string) {
	h.Set("User-Agent", e.userAgent())
	h.Set("Accept", e.accept)
	h.Set("Accept-Encoding", "identity")
	h.Set("Authorization", "Bearer "+token)
}
