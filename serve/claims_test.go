package serve

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source"
)

var stamp = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC`)

var update = flag.Bool("update", false, "rewrite the golden files")

// noTime drops the time from log lines, so that a golden holds them.
func noTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// What mcs says while nothing, or not every pool, is served is true: no
// "serving the last good render" where there is none, no "the first
// render is running" once it has failed (testdata/claims.txt holds each
// word).
func TestClaimsWhenNothingServed(t *testing.T) {
	broken := errors.New("dir/50-worker.yaml: MachineConfig/50-worker: $.spec.config.storage.files.0.path: relative path")
	w, m := result(t, "worker", plainIgn), result(t, "master", plainIgn)
	scenarios := []struct {
		name  string
		loads []load
	}{
		{"the first render is running", nil},
		{"the source fails as a whole at start", []load{{Err: errors.New("source directory: stat /srv/mcs: no such file or directory")}}},
		{"the one pool fails at start", []load{{In: &source.Input{Failed: map[string]error{"worker": broken}}}}},
		{"one pool never rendered, one served", []load{{In: &source.Input{Results: []*render.Result{m}, Failed: map[string]error{"worker": broken}}}}},
		{"a served pool fails", []load{{In: &source.Input{Results: []*render.Result{w, m}}}, {In: &source.Input{Results: []*render.Result{m}, Failed: map[string]error{"worker": broken}}}}},
	}
	var out strings.Builder
	for _, sc := range scenarios {
		start := out.Len()
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: noTime}))
		var told []string
		srv := mustNew(t, Config{Logger: log, Notify: func(n source.Notice) { told = append(told, n.Pool+": "+n.Message) }})
		rl := &pipeline.Reloader{Source: &inputs{Loads: sc.loads}, Server: srv, Logger: log}
		for range sc.loads {
			rl.Reload(context.Background())
		}
		fmt.Fprintf(&out, "== %s\n", sc.name)
		for _, path := range []string{"/config/worker", "/readyz"} {
			w := get(t, srv, "GET", path)
			body := w.Body.String()
			if w.Code == 200 && path != "/readyz" {
				body = "(the config)\n"
			}
			fmt.Fprintf(&out, "GET %s: %d %s", path, w.Code, body)
		}
		for _, c := range srv.Status().Conditions {
			if c.Type == "RenderDegraded" {
				fmt.Fprintf(&out, "RenderDegraded=%s: %s\n", c.Status, c.Message)
			}
		}
		now := time.Now()
		if le := srv.Status().LastError; le != nil {
			now = le.Time
		}
		for _, p := range status.Problems(srv.Status(), now) {
			fmt.Fprintf(&out, "problem: %s\n", p.Title)
		}
		for _, n := range told {
			fmt.Fprintf(&out, "notice %s\n", n)
		}
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if strings.Contains(line, "render failed") || strings.Contains(line, "node waiting") {
				fmt.Fprintf(&out, "log: %s\n", line)
			}
		}
		said := out.String()[start:]
		lies := []string{"the newest render is served"} // none is, in any scenario
		if len(sc.loads) > 0 {
			lies = append(lies, "the first render is running", "no render loaded yet")
		}
		if sc.name != "a served pool fails" {
			lies = append(lies, "last good render")
		}
		for _, lie := range lies {
			if strings.Contains(said, lie) {
				t.Errorf("%s: mcs says %q:\n%s", sc.name, lie, said)
			}
		}
	}
	got := stamp.ReplaceAllString(out.String(), "<time>")
	testkit.Golden(t, "testdata/claims.txt", got, *update)
}

// A request a script or a person gets wrong is told what was wrong, in
// its own terms (testdata/mistakes.txt holds each answer).
func TestQueryAndAcceptMistakes(t *testing.T) {
	s := worker(t, Config{})
	var out strings.Builder
	for _, c := range []struct{ target, accept string }{
		{"/config/worker", pipeline.IgnitionType + ";version=3.2.0;q=0"},
		{"/config/worker", pipeline.IgnitionType + ";version=3.2.0;q=0, " + pipeline.IgnitionType + ";version=4.0.0"},
		{"/config/worker", pipeline.IgnitionType + ";version=4.0.0"},
		{"/config/worker?format=yaml", ""},
		{"/config/worker?format=JSON", ""},
		{"/config/worker?verison=3.2.0", ""},
		{"/config/worker?pretty=1&spec=3.2.0", ""},
		{"/config/worker?version=3.9.0", ""},
		{"/config/scan1", ""},
		{"/status?format=yaml", ""},
	} {
		w := get(t, s, "GET", c.target, "Accept", c.accept)
		body := w.Body.String()
		if w.Code == 200 {
			body = "(the config, " + w.Header().Get("Content-Type") + ")\n"
		}
		fmt.Fprintf(&out, "GET %s Accept: %q\n%d %s", c.target, c.accept, w.Code, body)
	}
	got := out.String()
	if strings.Contains(got, "q=0\"\n406 Accept names no spec this server writes") {
		t.Errorf("a spec refused with q=0 is answered as if none were named:\n%s", got)
	}
	testkit.Golden(t, "testdata/mistakes.txt", got, *update)
}

// Two MachineConfigs writing one file and two kernel types: /status says
// which won over which, in the JSON and on the page.
func TestStatusOverrides(t *testing.T) {
	var l render.Loader
	for _, mc := range []struct{ name, spec string }{
		{"50-a", "kernelType: realtime\n  config: {ignition: {version: 3.2.0}, storage: {files: [{path: /etc/dup.conf, contents: {source: 'data:,a'}}]}}"},
		{"60-b", "kernelType: 64k-pages\n  config: {ignition: {version: 3.2.0}, storage: {files: [{path: /etc/dup.conf, contents: {source: 'data:,b'}}]}}"},
	} {
		l.Data("in/"+mc.name+".yaml", []byte("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: "+mc.name+
			"\n  labels: {machineconfiguration.openshift.io/role: worker}\nspec:\n  "+mc.spec+"\n"))
	}
	set, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	res, err := set.RenderPool("worker", render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, Config{}, res)
	want := []string{
		"file /etc/dup.conf: contents of MachineConfig 50-a (in/50-a.yaml:8) replaced by 60-b (in/60-b.yaml:8), the later in merge order",
		"spec.kernelType: the value of MachineConfig 50-a (in/50-a.yaml:7) replaced by 60-b (in/60-b.yaml:7), the later in merge order",
	}
	st := s.Status()
	var got []string
	for _, o := range st.Pools[0].Overrides {
		got = append(got, o.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("/status overrides:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	page := get(t, s, "GET", "/status?format=html").Body.String()
	for _, w := range want {
		if !strings.Contains(page, html.EscapeString(w)) {
			t.Errorf("the status page lacks %q", w)
		}
	}
}
