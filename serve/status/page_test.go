package status

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/ignition-mcs/mcs/internal/htmltest"
	"github.com/ignition-mcs/mcs/skewgate"
)

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

// A source that fails to load fails every pool's render: the Pools table
// says so beside the problem, never "ok" under "Rendering fails".
func TestStatusPageWholeRenderFails(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	st := Status{Ready: true, Pools: []PoolStatus{{Name: "worker", Rendered: "rendered-worker-1"}},
		LastError: &RenderError{Time: now, Since: now, Message: "97-x.yaml:3: invalid YAML"}}
	doc := parsedPage(t, st)
	if row := htmltest.Text(htmltest.ByID(t, doc, "row-worker")); !strings.Contains(row, "failing: serves its last good render") || strings.Contains(row, "ok") {
		t.Errorf("the worker's row says %q while the whole render fails", row)
	}
	if problems := htmltest.Text(htmltest.ByID(t, doc, "problems")); !strings.Contains(problems, "invalid YAML") {
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
	doc := parsedPage(t, st)
	skew := htmltest.Text(htmltest.ByID(t, doc, "skew"))
	if strings.Contains(skew, "Oldest boot image supported") {
		t.Errorf("mode None shows a boot-image limit it does not enforce: %s", skew)
	}
	if n := strings.Count(strings.ToLower(skew), "no node has been refused"); n != 1 {
		t.Errorf("the skew section says no node was refused %d times: %s", n, skew)
	}
}

// parsedPage is st as the page, parsed.
func parsedPage(t *testing.T, st Status) *html.Node {
	t.Helper()
	w := httptest.NewRecorder()
	if err := WritePage(w, st); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
