package ignclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ign22 "github.com/coreos/ignition/config/v2_2"
	ign30 "github.com/coreos/ignition/v2/config/v3_0"
	ign34 "github.com/coreos/ignition/v2/config/v3_4"
	"github.com/vincent-petithory/dataurl"
)

// wantHeaders is the table "What real clients send" of the reference
// (shared/reference/ignition.md), for the clients Find returns.
var wantHeaders = map[string]struct{ accept, userAgent string }{
	"v2.27.0": {"application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1", "Ignition/v2.27.0"},
	"v2.24.0": {"application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1", "Ignition/v2.24.0"},
	"v2.19.0": {"application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1", "Ignition/v2.19.0"},
	"v2.14.0": {"application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1", "Ignition/v2.14.0"},
	"v2.9.0":  {"application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1", "Ignition/v2.9.0"},
	// v2.0.x sent the spec-2 header of v0.x, though it reads only spec 3.0.
	"v2.0.0":  {"application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1", "Ignition/v2.0.0"},
	"v0.35.0": {"application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1", "Ignition/v0.35.0"},
}

// request is what the test server saw of one request.
type request struct {
	Path, Accept, AcceptEncoding, UserAgent, Authorization string
}

// server serves fixed bodies by path and records every request.
type server struct {
	*httptest.Server
	mu    sync.Mutex
	seen  []request
	onHit func(seen []request) // called after recording each request, under mu
}

type response struct {
	status int
	body   string
}

func newServer(t testing.TB, routes func(url string) map[string]response) *server {
	t.Helper()
	s := &server{}
	var table map[string]response
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, request{
			Path:           r.URL.Path,
			Accept:         r.Header.Get("Accept"),
			AcceptEncoding: r.Header.Get("Accept-Encoding"),
			UserAgent:      r.Header.Get("User-Agent"),
			Authorization:  r.Header.Get("Authorization"),
		})
		if s.onHit != nil {
			s.onHit(s.seen)
		}
		s.mu.Unlock()
		resp, ok := table[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if resp.status == http.StatusUnauthorized && r.Header.Get("Authorization") == "Bearer s3cret" {
			resp = table[r.URL.Path+"+auth"]
		}
		if resp.status != 0 {
			w.WriteHeader(resp.status)
		}
		w.Write([]byte(resp.body))
	}))
	t.Cleanup(s.Close)
	table = routes(s.URL)
	return s
}

func (s *server) requests(path string) []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []request
	for _, r := range s.seen {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// The harness config: an inline file with a non-default mode, a file the
// client fetches from the server, and an enabled unit.
const (
	inlinePath  = "/etc/mcs-harness/inline.txt"
	inlineData  = "inline: 100% \"quoted\" ünïcode\nsecond line\n"
	inlineMode  = 0o640
	remotePath  = "/etc/mcs-harness/remote.txt"
	remoteData  = "fetched from the server\n"
	unitName    = "mcs-harness.service"
	unitData    = "[Unit]\nDescription=mcs harness\n[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
	presetPath  = "/etc/systemd/system-preset/20-ignition.preset"
	configPath  = "/config/worker"
	blobPath    = "/blob/remote.txt"
	coreSSHKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHarnessKeyHarnessKeyHarnessKeyHarness mcs@harness"
	securedPath = "/config/secured"
)

// harnessConfig is the config in a spec every client of its family reads:
// 3.0.0 for the spec-3 clients (the oldest, v2.0.0, reads only 3.0), 2.2.0
// for spec 2.
func harnessConfig(t testing.TB, spec2 bool, url string) string {
	t.Helper()
	file := func(path, source string, mode int) map[string]any {
		f := map[string]any{"path": path, "mode": mode, "contents": map[string]any{"source": source}}
		if spec2 {
			f["filesystem"] = "root"
		}
		return f
	}
	version := "3.0.0"
	if spec2 {
		version = "2.2.0"
	}
	cfg := map[string]any{
		"ignition": map[string]any{"version": version},
		"storage": map[string]any{"files": []any{
			file(inlinePath, dataurl.New([]byte(inlineData), "text/plain").String(), inlineMode),
			file(remotePath, url+blobPath, 0o644),
		}},
		"systemd": map[string]any{"units": []any{
			map[string]any{"name": unitName, "enabled": true, "contents": unitData},
		}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The client must get a config its own parser accepts; check with the
	// same parsers, so a broken fixture fails here and not as a client error.
	if spec2 {
		_, rpt, err := ign22.Parse(b)
		if err != nil || rpt.IsFatal() {
			t.Fatalf("harness config does not parse as 2.2: %v %v", err, rpt)
		}
	} else {
		_, rpt, err := ign30.Parse(b)
		if err != nil || rpt.IsFatal() {
			t.Fatalf("harness config does not parse as 3.0: %v %v", err, rpt)
		}
	}
	return string(b)
}

func harnessRoutes(t testing.TB, spec2 bool) func(string) map[string]response {
	return func(url string) map[string]response {
		return map[string]response{
			configPath: {body: harnessConfig(t, spec2, url)},
			blobPath:   {body: remoteData},
		}
	}
}

// scratch is a Run directory: t.TempDir's parent is private to root, and
// the clients write a user's files as that user.
func scratch(t *testing.T) string {
	t.Helper()
	dir, err := mkdirScratch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestRun(t *testing.T) {
	for _, c := range Find(t) {
		t.Run(c.Version, func(t *testing.T) {
			want, ok := wantHeaders[c.Version]
			if !ok {
				t.Fatalf("no reference headers for %s: add them to wantHeaders", c)
			}
			srv := newServer(t, harnessRoutes(t, c.Spec2))
			start := time.Now()
			res, err := run(testContext(t, 60*time.Second), c, srv.URL+configPath, Options{Dir: scratch(t)}, nil)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, logOf(res))
			}
			t.Logf("%s: fetch+files in %s (%v)", c, time.Since(start).Round(time.Millisecond), res.Stages)

			for _, f := range []struct {
				path string
				mode fs.FileMode
				data string
			}{
				{inlinePath, inlineMode, inlineData},
				{remotePath, 0o644, remoteData},
				{"/etc/systemd/system/" + unitName, 0o644, unitData},
			} {
				assertFile(t, res, f.path, f.mode, f.data)
			}
			preset, err := res.ReadFile(presetPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(preset), "enable "+unitName+"\n") {
				t.Errorf("%s = %q, want it to enable %s", presetPath, preset, unitName)
			}

			cfgReqs := srv.requests(configPath)
			if len(cfgReqs) != 1 {
				t.Fatalf("config fetched %d times, want once (the files stage reads the cache): %+v", len(cfgReqs), cfgReqs)
			}
			wantReq := request{Path: configPath, Accept: want.accept, AcceptEncoding: "identity", UserAgent: want.userAgent}
			if cfgReqs[0] != wantReq {
				t.Errorf("config request\n got %+v\nwant %+v", cfgReqs[0], wantReq)
			}
			// v2.1+ sends its config headers on every HTTP fetch; v0.35 and
			// v2.0 send only their User-Agent on file fetches (Go's own
			// Accept-Encoding), not, as the reference says, nothing.
			blobReqs := srv.requests(blobPath)
			if len(blobReqs) != 1 {
				t.Fatalf("remote file fetched %d times, want once: %+v", len(blobReqs), blobReqs)
			}
			blob := blobReqs[0]
			if c.Spec2 || c.Version == "v2.0.0" {
				if blob != (request{Path: blobPath, AcceptEncoding: "gzip", UserAgent: want.userAgent}) {
					t.Errorf("file request %+v, want only the User-Agent of the client", blob)
				}
			} else if blob != (request{Path: blobPath, Accept: want.accept, AcceptEncoding: "identity", UserAgent: want.userAgent}) {
				t.Errorf("file request %+v, want the config request's headers", blob)
			}
		})
	}
}

// The files stage of a non-root run goes through `unshare -r`; force that
// path as root too, so CI covers it.
func TestRunUnshare(t *testing.T) {
	for _, c := range Find(t) {
		t.Run(c.Version, func(t *testing.T) {
			srv := newServer(t, harnessRoutes(t, c.Spec2))
			res, err := run(testContext(t, 60*time.Second), c, srv.URL+configPath, Options{Dir: scratch(t), Unshare: true}, nil)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, logOf(res))
			}
			assertFile(t, res, inlinePath, inlineMode, inlineData)
			assertFile(t, res, "/etc/systemd/system/"+unitName, 0o644, unitData)
		})
	}
}

func assertFile(t *testing.T, res *Result, path string, mode fs.FileMode, data string) {
	t.Helper()
	fi, err := res.Lstat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want regular %v", path, fi.Mode(), mode)
	}
	got, err := res.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if string(got) != data {
		t.Errorf("%s = %q, want %q", path, got, data)
	}
}

func logOf(res *Result) string {
	if res == nil {
		return "(no result)"
	}
	return res.Log
}

func TestRunToken(t *testing.T) {
	for _, c := range Find(t) {
		t.Run(c.Version, func(t *testing.T) {
			srv := newServer(t, func(url string) map[string]response {
				routes := harnessRoutes(t, c.Spec2)(url)
				routes[securedPath] = response{status: http.StatusUnauthorized, body: "token required\n"}
				routes[securedPath+"+auth"] = routes[configPath]
				return routes
			})
			url := srv.URL + securedPath
			if !c.Headers() {
				if _, err := run(t.Context(), c, url, Options{Dir: scratch(t), Token: "s3cret"}, nil); err == nil {
					t.Fatal("a spec-2 or spec-3.0 client was given a token it cannot send")
				}
				return
			}
			res, err := run(testContext(t, 60*time.Second), c, url, Options{Dir: scratch(t), Token: "s3cret"}, nil)
			if err != nil {
				t.Fatalf("with token: %v\n%s", err, logOf(res))
			}
			assertFile(t, res, inlinePath, inlineMode, inlineData)
			if got := srv.requests(securedPath); len(got) != 1 || got[0].Authorization != "Bearer s3cret" {
				t.Errorf("secured requests %+v, want one with the bearer token", got)
			}

			res, err = run(testContext(t, 60*time.Second), c, url, Options{Dir: scratch(t)}, nil)
			var se *stageError
			if !errors.As(err, &se) || se.Stage != "fetch" || se.ExitCode != 1 {
				t.Fatalf("without token: err %v, want a failed fetch stage\n%s", err, logOf(res))
			}
			if _, err := res.Lstat(inlinePath); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("without token %s exists (%v)", inlinePath, err)
			}
		})
	}
}

// The spec-3 clients modify the image's core user (usermod --root) and
// write its SSH keys; the spec-2 client would chroot into the scratch root to
// run useradd, which it cannot.
func TestRunCoreUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("users need root: unshare -r maps only one uid, so home/core cannot belong to uid 1000")
	}
	for _, c := range Find(t) {
		if c.ChrootUsers {
			continue
		}
		t.Run(c.Version, func(t *testing.T) {
			cfg := fmt.Sprintf(`{"ignition":{"version":"3.0.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":[%q]}]}}`, coreSSHKey)
			srv := newServer(t, func(string) map[string]response { return map[string]response{configPath: {body: cfg}} })
			res, err := run(testContext(t, 60*time.Second), c, srv.URL+configPath, Options{Dir: scratch(t)}, nil)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, logOf(res))
			}
			const keys = "/home/core/.ssh/authorized_keys.d/ignition"
			got, err := res.ReadFile(keys)
			if err != nil {
				t.Fatalf("%v\n%s", err, res.Log)
			}
			if string(got) != coreSSHKey+"\n" {
				t.Errorf("%s = %q, want the key", keys, got)
			}
			fi, err := res.Lstat(keys)
			if err != nil {
				t.Fatal(err)
			}
			if uid := ownerUID(fi); uid != 1000 {
				t.Errorf("%s owned by uid %d, want 1000 (core)", keys, uid)
			}
			passwd, err := res.ReadFile("/etc/passwd")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(passwd, []byte("\ncore:x:1000:1000:")) {
				t.Errorf("usermod lost the core user:\n%s", passwd)
			}
		})
	}
}

// failure is a response a server should not give and each client's
// outcome.
type failure struct {
	name      string
	resp      func(spec2 bool) response
	opts      Options
	cancelAt  int // cancel the run at this many config requests
	want      func(c Client) outcome
	emptyRoot bool // on success, nothing but the result file lands
}

type outcome struct {
	ok       bool   // both stages succeeded
	canceled bool   // still retrying when the test cancelled it
	last     string // substring of stageError.Last
	minHits  int    // config requests, at least
}

var unsupported = outcome{last: "unsupported config version", minHits: 1}

// failures are the HTTP answers, then the bodies, a server should not give.
func failures() []failure {
	return append([]failure{
		{
			name: "404 fails at once",
			resp: func(bool) response { return response{status: 404, body: "no such pool\n"} },
			want: func(Client) outcome { return outcome{last: "resource not found", minHits: 1} },
		},
		{
			name: "403 fails at once",
			resp: func(bool) response { return response{status: 403, body: "forbidden\n"} },
			want: func(Client) outcome { return outcome{last: "failed to fetch resource", minHits: 1} },
		},
		{
			name:     "500 is retried until the context ends",
			resp:     func(bool) response { return response{status: 500, body: "render failed\n"} },
			cancelAt: 3,
			want:     func(Client) outcome { return outcome{canceled: true, minHits: 3} },
		},
		{
			// mcs's answer to a token it does not accept (yet).
			name:     "511 is retried until the context ends",
			resp:     func(bool) response { return response{status: 511, body: "unauthorized\n"} },
			cancelAt: 3,
			want:     func(Client) outcome { return outcome{canceled: true, minHits: 3} },
		},
		{
			name: "401 fails at once",
			resp: func(bool) response { return response{status: 401, body: "unauthorized\n"} },
			want: func(Client) outcome { return outcome{last: "failed to fetch resource", minHits: 1} },
		},
		{
			name: "503 is retried until httpTotal",
			resp: func(bool) response { return response{status: 503, body: "not ready\n"} },
			opts: Options{HTTPTotal: 2 * time.Second},
			want: func(Client) outcome { return outcome{last: "unable to fetch resource in time", minHits: 2} },
		},
	}, bodyFailures()...)
}

func bodyFailures() []failure {
	return []failure{
		{
			name: "unknown version 9.9.0",
			resp: func(bool) response { return response{body: `{"ignition":{"version":"9.9.0"}}`} },
			want: func(Client) outcome { return unsupported },
		},
		{
			name: "no version",
			resp: func(bool) response { return response{body: `{"ignition":{}}`} },
			want: func(c Client) outcome {
				if c.Spec2 {
					return unsupported
				}
				return outcome{last: "invalid config version (couldn't parse)", minHits: 1}
			},
		},
		{
			name: "the other spec family",
			resp: func(spec2 bool) response {
				if spec2 {
					return response{body: `{"ignition":{"version":"3.4.0"}}`}
				}
				return response{body: `{"ignition":{"version":"2.2.0"}}`}
			},
			want: func(Client) outcome { return unsupported },
		},
		{
			name: "spec 3.6.0",
			resp: func(bool) response { return response{body: `{"ignition":{"version":"3.6.0"}}`} },
			want: func(c Client) outcome {
				if c.Version == "v2.27.0" {
					return outcome{ok: true, minHits: 1}
				}
				return unsupported
			},
			emptyRoot: true,
		},
		{
			name: "not JSON",
			resp: func(bool) response { return response{body: "<html>oops</html>\n"} },
			want: func(Client) outcome { return outcome{last: "config is not valid", minHits: 1} },
		},
		{
			name:      "204 is an empty config",
			resp:      func(bool) response { return response{status: 204} },
			want:      func(Client) outcome { return outcome{ok: true, minHits: 1} },
			emptyRoot: true,
		},
	}
}

// TestRunFailures pins down how each client reacts to answers a server
// should not give; README.md summarises it.
func TestRunFailures(t *testing.T) {
	clients := Find(t)
	for _, tc := range failures() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range clients {
				t.Run(c.Version, func(t *testing.T) {
					t.Parallel()
					runFailure(t, c, tc)
				})
			}
		})
	}
}

func runFailure(t *testing.T, c Client, tc failure) {
	srv := newServer(t, func(string) map[string]response {
		return map[string]response{configPath: tc.resp(c.Spec2)}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if tc.cancelAt > 0 {
		// Cancel on the server's count, not on a clock: the
		// clients start slowly on a loaded machine.
		srv.mu.Lock()
		srv.onHit = func(seen []request) {
			if len(seen) >= tc.cancelAt {
				cancel()
			}
		}
		srv.mu.Unlock()
	}
	opts := tc.opts
	opts.Dir = scratch(t)
	opts.FetchTimeout = 5 * time.Second
	res, err := run(ctx, c, srv.URL+configPath, opts, nil)
	want := tc.want(c)
	hits := len(srv.requests(configPath))
	t.Logf("%s: %d requests, err %v, stages %v", c, hits, err, res.Stages)
	if hits < want.minHits {
		t.Errorf("%d config requests, want at least %d", hits, want.minHits)
	}
	switch {
	case want.ok:
		if err != nil {
			t.Fatalf("err %v, want success\n%s", err, res.Log)
		}
		if tc.emptyRoot {
			assertOnlySeed(t, res)
		}
		return
	case err == nil:
		t.Fatalf("succeeded, want a failure\n%s", res.Log)
	}
	var se *stageError
	first := "fetch"
	if c.NoFetchStage {
		first = "files" // the stage that fetches
	}
	if !errors.As(err, &se) || se.Stage != first || len(res.Stages) != 1 {
		t.Fatalf("err %v after stages %v, want the %s stage to fail and no other to run", err, res.Stages, first)
	}
	if want.canceled {
		if !errors.Is(err, context.Canceled) || se.ExitCode != -1 {
			t.Errorf("err %v (exit %d), want the cancelled context to kill the client", err, se.ExitCode)
		}
		return
	}
	if se.ExitCode != 1 || !strings.Contains(se.Last, want.last) {
		t.Errorf("exit %d, last error %q; want exit 1 and %q\n%s", se.ExitCode, se.Last, want.last, res.Log)
	}
}

// assertOnlySeed checks that an empty config wrote nothing but the v2
// clients' result file.
func assertOnlySeed(t *testing.T, res *Result) {
	t.Helper()
	allowed := map[string]bool{"/etc/.ignition-result.json": true}
	for _, s := range seed {
		allowed["/"+s.path] = true
	}
	err := filepath.WalkDir(res.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(res.Root, p)
		if !allowed["/"+rel] {
			t.Errorf("an empty config wrote /%s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPointerConfig(t *testing.T) {
	const url = "http://127.0.0.1:22624/config/worker"
	cases := []struct {
		name    string
		spec2   bool
		opts    Options
		want    string
		wantErr string
	}{
		{
			name: "spec 3 default",
			want: `{"ignition":{"config":{"merge":[{"source":"` + url + `"}]},"version":"3.1.0"}}`,
		},
		{
			name: "spec 3 with token",
			opts: Options{Token: "abc"},
			want: `{"ignition":{"config":{"merge":[{"httpHeaders":[{"name":"Authorization","value":"Bearer abc"}],"source":"` + url + `"}]},"version":"3.1.0"}}`,
		},
		{
			name: "spec 3.0 without token",
			opts: Options{PointerVersion: "3.0.0"},
			want: `{"ignition":{"config":{"merge":[{"source":"` + url + `"}]},"version":"3.0.0"}}`,
		},
		{
			name: "spec 3 httpTotal rounds up",
			opts: Options{PointerVersion: "3.4.0", HTTPTotal: 1500 * time.Millisecond},
			want: `{"ignition":{"config":{"merge":[{"source":"` + url + `"}]},"timeouts":{"httpTotal":2},"version":"3.4.0"}}`,
		},
		{
			name:  "spec 2",
			spec2: true,
			opts:  Options{PointerVersion: "3.4.0"}, // ignored: spec 2 has one pointer version
			want:  `{"ignition":{"config":{"append":[{"source":"` + url + `"}]},"version":"2.2.0"}}`,
		},
		{
			name:  "spec 2 httpTotal",
			spec2: true,
			opts:  Options{HTTPTotal: 3 * time.Second},
			want:  `{"ignition":{"config":{"append":[{"source":"` + url + `"}]},"timeouts":{"httpTotal":3},"version":"2.2.0"}}`,
		},
		{
			// The installer's shape: the cluster CA as a data URL.
			name: "spec 3 with the CA and a token",
			opts: Options{CA: []byte("PEM\n"), Token: "abc", PointerVersion: "3.2.0"},
			want: `{"ignition":{"config":{"merge":[{"httpHeaders":[{"name":"Authorization","value":"Bearer abc"}],"source":"` + url + `"}]},` +
				`"security":{"tls":{"certificateAuthorities":[{"source":"data:text/plain;charset=utf-8;base64,UEVNCg=="}]}},"version":"3.2.0"}}`,
		},
		{
			name:  "spec 2 with the CA",
			spec2: true,
			opts:  Options{CA: []byte("PEM\n")},
			want: `{"ignition":{"config":{"append":[{"source":"` + url + `"}]},` +
				`"security":{"tls":{"certificateAuthorities":[{"source":"data:text/plain;charset=utf-8;base64,UEVNCg=="}]}},"version":"2.2.0"}}`,
		},
		{name: "spec 2 cannot carry a token", spec2: true, opts: Options{Token: "abc"}, wantErr: "spec-2 pointer config cannot carry"},
		{name: "spec 3.0 cannot carry a token", opts: Options{Token: "abc", PointerVersion: "3.0.0"}, wantErr: "3.0.0 cannot carry httpHeaders"},
		{name: "spec 3 client with a spec 2 pointer", opts: Options{PointerVersion: "2.2.0"}, wantErr: `version "2.2.0"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pointerConfig(tc.spec2, url, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if err := parsePointer(got, tc.spec2, tc.opts.PointerVersion); err != nil {
				t.Errorf("pointer config does not parse: %v", err)
			}
		})
	}
}

// parsePointer is what the clients' own parsers make of a pointer config.
func parsePointer(got []byte, spec2 bool, version string) error {
	switch {
	case spec2:
		_, rpt, err := ign22.Parse(got)
		return errors.Join(err, reportErr(rpt.IsFatal(), rpt))
	case version == "3.0.0":
		_, rpt, err := ign30.Parse(got)
		return errors.Join(err, reportErr(rpt.IsFatal(), rpt))
	default:
		_, rpt, err := ign34.ParseCompatibleVersion(got)
		return errors.Join(err, reportErr(rpt.IsFatal(), rpt))
	}
}

func reportErr(fatal bool, rpt fmt.Stringer) error {
	if fatal {
		return errors.New(rpt.String())
	}
	return nil
}

func TestNodePath(t *testing.T) {
	cases := []struct{ in, want string }{
		{"/etc/passwd", "etc/passwd"},
		{"etc/passwd", "etc/passwd"},
		{"/", "."},
		{"", "."},
		{"/../../etc/shadow", "etc/shadow"},
		{"/home/core/../core/.ssh", "home/core/.ssh"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := nodePath(tc.in); got != tc.want {
				t.Errorf("nodePath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestReadFileStaysInRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "outside"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside", filepath.Join(root, "etc", "escape")); err != nil {
		t.Fatal(err)
	}
	res := &Result{Dir: dir, Root: root}
	if got, err := res.ReadFile("/etc/escape"); err == nil {
		t.Errorf("read %q through a symlink out of the root", got)
	}
	if fi, err := res.Lstat("/etc/escape"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat = %v, %v; want the symlink itself", fi, err)
	}
}

func TestLastError(t *testing.T) {
	cases := []struct{ name, log, want string }{
		{"none", "INFO     : Ignition v2.27.0\nINFO     : fetch passed\n", ""},
		{"critical after config dump", "CRITICAL : Ignition failed: resource not found\nINFO     : {\"ignition\":{}}\n", "CRITICAL : Ignition failed: resource not found"},
		{"last of several", "ERROR    : first\nWARNING  : failed to fetch config: x\nCRITICAL : Ignition failed: x\n", "CRITICAL : Ignition failed: x"},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := lastError([]byte(tc.log)); got != tc.want {
				t.Errorf("lastError = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFindSkipsOrFails(t *testing.T) {
	t.Setenv("MCS_TOOLS", t.TempDir())
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			rec := &recorder{TB: t}
			done := make(chan struct{})
			// Find ends the test through runtime.Goexit; run it apart.
			go func() {
				defer close(done)
				Find(rec)
			}()
			<-done
			switch {
			case ci == "true" && !rec.failed:
				t.Error("CI=true: missing clients did not fail the test")
			case ci != "true" && !rec.skipped:
				t.Error("missing clients outside CI did not skip the test")
			case !strings.Contains(rec.msg, "make ignition-clients"):
				t.Errorf("message %q does not say how to build the clients", rec.msg)
			}
		})
	}
}

// recorder stands in for the test Find would end.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func BenchmarkRun(b *testing.B) {
	for _, c := range Find(b) {
		b.Run(c.Version, func(b *testing.B) {
			b.ReportAllocs()
			srv := newServer(b, harnessRoutes(b, c.Spec2))
			parent := b.TempDir()
			for b.Loop() {
				dir, err := os.MkdirTemp(parent, "run-")
				if err != nil {
					b.Fatal(err)
				}
				if res, err := run(b.Context(), c, srv.URL+configPath, Options{Dir: dir}, nil); err != nil {
					b.Fatalf("%v\n%s", err, logOf(res))
				}
			}
		})
	}
}

func ownerUID(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// Running.Log shows a node's retries while it still runs, and ends as the
// Result's log: a test can wait for each node to have met a failure.
func TestStartLogWhileRunning(t *testing.T) {
	clients := Find(t)
	c := clients[len(clients)-1]
	var ready atomic.Bool
	var body string // set before ready
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == blobPath {
			w.Write([]byte(remoteData))
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	body = harnessConfig(t, c.Spec2, srv.URL)
	run := Start(testContext(t, 60*time.Second), c, srv.URL+configPath, Options{Dir: scratch(t)})
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(run.Log(), "attempt #") < 2 {
		select {
		case <-run.Done():
			_, err := run.Wait()
			t.Fatalf("stopped before retrying: %v\n%s", err, run.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two attempts in the live log:\n%s", run.Log())
		}
	}
	ready.Store(true)
	res, err := run.Wait()
	if err != nil {
		t.Fatalf("%v\n%s", err, logOf(res))
	}
	if run.Log() != res.Log {
		t.Errorf("the live log ends as\n%s\nthe Result's is\n%s", run.Log(), res.Log)
	}
}
