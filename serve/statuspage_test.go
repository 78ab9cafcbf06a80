package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/skewgate"
)

var screenshot = flag.String("screenshot", "", "write a screenshot of the status page to this PNG file (make screenshot)")

func TestWantsHTML(t *testing.T) {
	for _, tc := range []struct {
		name, accept, query string
		want                bool
	}{
		{"chromium", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8", "", true},
		{"firefox", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "", true},
		{"curl", "*/*", "", false},
		{"no header", "", "", false},
		{"json first", "application/json, text/html", "", false},
		{"json preferred by q", "text/html;q=0.5, application/json", "", false},
		{"html preferred by q", "application/json;q=0.5, text/html", "", true},
		{"html refused", "text/html;q=0, */*", "", false},
		{"format=json wins", "text/html", "format=json", false},
		{"format=html wins", "application/json", "format=html", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/status?"+tc.query, nil)
			r.Header.Set("Accept", tc.accept)
			if got := wantsHTML(r); got != tc.want {
				t.Errorf("wantsHTML(%q, %q) = %v", tc.accept, tc.query, got)
			}
		})
	}
}

// The page as served: the data a person needs, and a stylesheet the
// Content-Security-Policy admits by hash (nothing else is allowed).
func TestStatusPage(t *testing.T) {
	s := demoServer(t, nil)
	w := get(t, s, http.MethodGet, "/status", "Accept", "text/html")
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	doc, err := html.Parse(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	checkStatusDOM(t, s, doc)

	style := find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "style" })
	if style == nil || style.FirstChild == nil {
		t.Fatal("no <style>")
	}
	sum := sha256.Sum256([]byte(style.FirstChild.Data))
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("the CSP %q does not admit the page's stylesheet", csp)
	}
	for _, tag := range []string{"script", "link", "img", "iframe"} {
		if n := find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == tag }); n != nil {
			t.Errorf("the page has a <%s>", tag)
		}
	}
}

// The page in a real browser (Debian's chromium, headless): it loads over
// HTTP with the browser's own Accept header and its DOM holds the data.
// `make screenshot` passes -screenshot to write docs/status-page.png.
func TestStatusPageInChromium(t *testing.T) {
	bin := needChromium(t)
	s := demoServer(t, nil)
	ts := httptest.NewServer(s)
	defer ts.Close()
	dom := runChromium(t, bin, "--dump-dom", ts.URL+"/status")
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	checkStatusDOM(t, s, doc)
	checkPageFits(t, bin, s, 1280)
	// A pool whose reasons have long JSON paths (no place to break them).
	checkPageFits(t, bin, fixtureServer(t, "../fixtures/features/tang-advertisement-3.4"), 1280)
	if *screenshot == "" {
		return
	}
	out, err := filepath.Abs(*screenshot)
	if err != nil {
		t.Fatal(err)
	}
	runChromium(t, bin, "--hide-scrollbars", "--window-size=1280,1600", "--screenshot="+out, ts.URL+"/status")
	png, err := os.ReadFile(out)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("no PNG at %s: %v", out, err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))
}

// checkPageFits checks the status page needs no sideways scrolling in a
// window width pixels wide: long names and values wrap. The page is served
// with a script (the test's, its policy lifted) that writes the
// document's scrollWidth into the DOM Chromium dumps.
func checkPageFits(t *testing.T, bin string, s *Server, width int) {
	t.Helper()
	const script = `<script>document.body.setAttribute("data-scroll-width", document.documentElement.scrollWidth)</script>`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.Write(bytes.Replace(rec.Body.Bytes(), []byte("</body>"), []byte(script+"</body>"), 1))
	}))
	defer ts.Close()
	dom := runChromium(t, bin, "--hide-scrollbars", "--window-size="+strconv.Itoa(width)+",900", "--dump-dom", ts.URL+"/status")
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	body := find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "body" })
	got, err := strconv.Atoi(attr(body, "data-scroll-width"))
	if err != nil {
		t.Fatalf("no scroll width in the page: %v", err)
	}
	if got > width {
		t.Errorf("the status page is %d px wide in a %d px window: it scrolls sideways", got, width)
	}
}

// fixtureServer serves the tree of MachineConfigs in dir.
func fixtureServer(t *testing.T, dir string) *Server {
	t.Helper()
	src := &demoSource{dir: dir, shown: dir}
	s := mustNew(t, Config{Source: src.String()})
	if err := (&pipeline.Reloader{Source: src, Server: s}).Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func needChromium(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		testkit.Missing(t, "no chromium: `make chromium` installs it")
	}
	return bin
}

func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// checkStatusDOM checks the page shows what the server's status holds:
// problems first, every pool with its spec and why, the refused nodes, and
// the fetches.
func checkStatusDOM(t *testing.T, s *Server, doc *html.Node) {
	t.Helper()
	st := s.Status()
	if got := textOf(byID(t, doc, "verdict")); got != "2 problems" {
		t.Errorf("verdict %q", got)
	}
	problems := textOf(byID(t, doc, "problems"))
	for _, want := range []string{"Pool infra: its newest render fails since", "$.spec.kernelType", "2 recent node requests refused"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q: %s", want, problems)
		}
	}
	if first := find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "section" }); attr(first, "id") != "problems" {
		t.Errorf("the first section is %q, not the problems", attr(first, "id"))
	}
	for _, p := range st.Pools {
		row := cells(byID(t, doc, "row-"+p.Name))
		render := "ok"
		if p.Error != "" {
			render = "failing for "
		}
		if len(row) != 6 || row[0] != p.Name || row[1] != p.Rendered || row[2] != p.Spec.String() || !strings.HasPrefix(row[4], render) {
			t.Errorf("pool %s row %q", p.Name, row)
		}
	}
	worker := byID(t, doc, "pool-worker")
	for _, r := range poolStatus(t, st, "worker").Reasons {
		want := []string{r.Path.String(), r.What, r.Version.String(), r.MachineConfig, r.ConfigPath.String()}
		if !hasRow(worker, want) {
			t.Errorf("pool worker has no row %q", want)
		}
	}
	for _, c := range poolStatus(t, st, "worker").Fetches[0].Clients {
		if !hasRow(worker, []string{c.Ignition, strconv.FormatUint(c.Count, 10), timestamp(c.First)}) {
			t.Errorf("pool worker shows no fetches %+v", c)
		}
	}
	skew := byID(t, doc, "skew")
	if !strings.Contains(textOf(skew), "Mode Manual") {
		t.Errorf("skew section: %s", textOf(skew))
	}
	recent := s.rec.gate.Recent()
	if len(recent) != 2 {
		t.Fatalf("%d refused", len(recent))
	}
	for _, b := range recent {
		host, _, _ := strings.Cut(b.RemoteAddr, ":")
		ver := strings.TrimPrefix(b.Client, "Ignition/")
		if !hasRow(skew, []string{timestamp(b.Time), b.Pool, host, ver, b.Reason, b.ID}) {
			t.Errorf("refused node %+v not shown", b)
		}
	}
}

func poolStatus(t *testing.T, st Status, name string) PoolStatus {
	t.Helper()
	for _, p := range st.Pools {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no pool %s", name)
	return PoolStatus{}
}

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if m := find(c, match); m != nil {
			return m
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func byID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	n := find(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	if n == nil {
		t.Fatalf("no element #%s", id)
	}
	return n
}

// text is n's text with whitespace collapsed.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data + " ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// cells are the texts of a table row's cells.
func cells(tr *html.Node) []string {
	var out []string
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "td" {
			out = append(out, textOf(c))
		}
	}
	return out
}

// hasRow reports whether a table row under n has cells starting with want,
// in order.
func hasRow(n *html.Node, want []string) bool {
	return find(n, func(n *html.Node) bool {
		if n.Type != html.ElementNode || n.Data != "tr" {
			return false
		}
		got := cells(n)
		if len(got) < len(want) {
			return false
		}
		for i, w := range want {
			if !strings.HasPrefix(got[i], w) {
				return false
			}
		}
		return true
	}) != nil
}

// A stuck load and skipped files head the page's problems, worst first.
func TestStatusPageProblemsStuckAndSkipped(t *testing.T) {
	st := Status{Ready: true,
		ReloadStuck: "reload stuck since 2026-11-23T14:00:00Z, reading /etc/mcs/97-x.yaml",
		Warnings:    []string{"97-x.yaml: warning: not a regular file: a named pipe (FIFO), so never opened; skipped"}}
	got := problems(st, nil, time.Now())
	if len(got) != 2 {
		t.Fatalf("problems = %+v, want the stuck load and the skipped file", got)
	}
	if !strings.Contains(got[0].Detail, "reading /etc/mcs/97-x.yaml") || got[0].Warn {
		t.Errorf("first problem %+v, want the stuck load as an error", got[0])
	}
	if !strings.Contains(got[1].Detail, "named pipe") || !got[1].Warn {
		t.Errorf("second problem %+v, want the skipped FIFO as a warning", got[1])
	}
}

// Nodes waiting on a retried answer head the page with the cause and the
// fix, as /status's JSON lists them.
func TestStatusPageWaitingNodes(t *testing.T) {
	s := worker(t, tokensCfg(Config{}))
	for range 2 {
		get(t, s, http.MethodGet, "/config/worker", "User-Agent", "Ignition/v2.27.0", "Authorization", "Bearer infra-token")
	}
	w := get(t, s, http.MethodGet, "/status?format=html", "Authorization", "Bearer new-token")
	doc, err := html.Parse(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	problems := textOf(byID(t, doc, "problems"))
	for _, want := range []string{"Nodes wait, answered 511 (token-other-pool) for pool worker: 2 requests from 1 address(es)", "add the pool"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q: %s", want, problems)
		}
	}
}

// A source that fails to load fails every pool's render: the Pools table
// says so beside the problem, never "ok" under "Rendering fails".
func TestStatusPageWholeRenderFails(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	st := Status{Ready: true, Pools: []PoolStatus{{Name: "worker", Rendered: "rendered-worker-1"}},
		LastError: &RenderError{Time: now, Since: now, Message: "97-x.yaml:3: invalid YAML"}}
	w := httptest.NewRecorder()
	statusPage(w, st, slog.New(slog.DiscardHandler))
	doc, err := html.Parse(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	if row := textOf(byID(t, doc, "row-worker")); !strings.Contains(row, "failing: serves its last good render") || strings.Contains(row, "ok") {
		t.Errorf("the worker's row says %q while the whole render fails", row)
	}
	if problems := textOf(byID(t, doc, "problems")); !strings.Contains(problems, "invalid YAML") {
		t.Errorf("problems: %s", problems)
	}
}

// The skew section says each thing once, and nothing a mode does not do:
// with mode None the release's oldest boot image is not enforced, so not
// shown; "no node has been refused" is not repeated under its heading.
func TestStatusPageSkewSaysItOnce(t *testing.T) {
	st := Status{Ready: true, Pools: []PoolStatus{{Name: "worker", Rendered: "rendered-worker-1"}},
		SkewPolicy: &skewgate.Policy{Mode: "None", Release: skewgate.ReleaseLimits{OCPVersion: "4.14.0"}},
		Conditions: []Condition{{Type: "BootImageSkew", Status: "False", Reason: "NoNodesBlocked", Message: "no node has been refused"}}}
	w := httptest.NewRecorder()
	statusPage(w, st, slog.New(slog.DiscardHandler))
	doc, err := html.Parse(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	skew := textOf(byID(t, doc, "skew"))
	if strings.Contains(skew, "Oldest boot image supported") {
		t.Errorf("mode None shows a boot-image limit it does not enforce: %s", skew)
	}
	if n := strings.Count(strings.ToLower(skew), "no node has been refused"); n != 1 {
		t.Errorf("the skew section says no node was refused %d times: %s", n, skew)
	}
}
