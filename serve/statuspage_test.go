package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"flag"
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

	"github.com/ignition-mcs/mcs/internal/htmltest"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/serve/status"
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

	style := htmltest.Find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "style" })
	if style == nil || style.FirstChild == nil {
		t.Fatal("no <style>")
	}
	sum := sha256.Sum256([]byte(style.FirstChild.Data))
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("the CSP %q does not admit the page's stylesheet", csp)
	}
	for _, tag := range []string{"script", "link", "img", "iframe"} {
		if n := htmltest.Find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == tag }); n != nil {
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
	body := htmltest.Find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "body" })
	got, err := strconv.Atoi(htmltest.Attr(body, "data-scroll-width"))
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
	if got := htmltest.Text(htmltest.ByID(t, doc, "verdict")); got != "2 problems" {
		t.Errorf("verdict %q", got)
	}
	problems := htmltest.Text(htmltest.ByID(t, doc, "problems"))
	for _, want := range []string{"Pool infra: its newest render fails since", "$.spec.kernelType", "2 recent node requests refused"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q: %s", want, problems)
		}
	}
	if first := htmltest.Find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "section" }); htmltest.Attr(first, "id") != "problems" {
		t.Errorf("the first section is %q, not the problems", htmltest.Attr(first, "id"))
	}
	for _, p := range st.Pools {
		row := htmltest.Cells(htmltest.ByID(t, doc, "row-"+p.Name))
		render := "ok"
		if p.Error != "" {
			render = "failing for "
		}
		if len(row) != 6 || row[0] != p.Name || row[1] != p.Rendered || row[2] != p.Spec.String() || !strings.HasPrefix(row[4], render) {
			t.Errorf("pool %s row %q", p.Name, row)
		}
	}
	worker := htmltest.ByID(t, doc, "pool-worker")
	for _, r := range poolStatus(t, st, "worker").Reasons {
		want := []string{r.Path.String(), r.What, r.Version.String(), r.MachineConfig, r.ConfigPath.String()}
		if !htmltest.HasRow(worker, want) {
			t.Errorf("pool worker has no row %q", want)
		}
	}
	for _, c := range poolStatus(t, st, "worker").Fetches[0].Clients {
		if !htmltest.HasRow(worker, []string{c.Ignition, strconv.FormatUint(c.Count, 10), pageTime(c.First)}) {
			t.Errorf("pool worker shows no fetches %+v", c)
		}
	}
	skew := htmltest.ByID(t, doc, "skew")
	if !strings.Contains(htmltest.Text(skew), "Mode Manual") {
		t.Errorf("skew section: %s", htmltest.Text(skew))
	}
	recent := s.cfg.Gate.Recent()
	if len(recent) != 2 {
		t.Fatalf("%d refused", len(recent))
	}
	for _, b := range recent {
		host, _, _ := strings.Cut(b.RemoteAddr, ":")
		ver := strings.TrimPrefix(b.Client, "Ignition/")
		if !htmltest.HasRow(skew, []string{pageTime(b.Time), b.Pool, host, ver, b.Reason, b.ID}) {
			t.Errorf("refused node %+v not shown", b)
		}
	}
}

// pageTime is a time as the page shows it.
func pageTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func poolStatus(t *testing.T, st status.Status, name string) status.PoolStatus {
	t.Helper()
	for _, p := range st.Pools {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no pool %s", name)
	return status.PoolStatus{}
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
	problems := htmltest.Text(htmltest.ByID(t, doc, "problems"))
	for _, want := range []string{"Nodes wait, answered 511 (token-other-pool) for pool worker: 2 requests from 1 address(es)", "add the pool"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q: %s", want, problems)
		}
	}
}
