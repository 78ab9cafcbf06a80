package status

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/serve/fetchlog"
	"github.com/ignition-mcs/mcs/skewgate"
)

// The page is one request with no script and nothing fetched: it must work
// through a port-forward, on a bastion's text browser, at 2 a.m.
//
//go:embed templates/status.html templates/status.css
var templates embed.FS

var (
	pageCSS      = mustRead("templates/status.css")
	pageTemplate = template.Must(template.New("status.html").Funcs(template.FuncMap{
		"ts":  func(t any) string { return timestamp(deref(t)) },
		"ago": func(t any, now time.Time) string { return ago(deref(t), now) },
		"age": func(t any, now time.Time) string { return age(deref(t), now) },
	}).ParseFS(templates, "templates/status.html"))
	// pageCSP allows the page's own stylesheet, by hash, and nothing else.
	pageCSP = func() string {
		sum := sha256.Sum256([]byte(pageCSS))
		return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	}()
)

func mustRead(name string) string {
	b, err := templates.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// WritePage writes st as the page, with its headers; on an error it
// writes nothing.
func WritePage(w http.ResponseWriter, st Status) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, newPage(st, time.Now())); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "Accept")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", pageCSP)
	w.Write(buf.Bytes())
	return nil
}

// page is what the template shows: the status document, and what a person
// needs computed from it.
type page struct {
	Status
	Now      time.Time
	CSS      template.CSS
	Problems []Problem
	Cards    []poolView
	Skew     *Condition
	Refused  []refusedView
}

// Problem is one thing wrong, as the page heads it: an error, or with
// Warn a warning; Anchor is the section that shows more.
type Problem struct {
	Warn   bool
	Title  string
	Detail string
	Anchor string
}

type poolView struct {
	PoolStatus
	Specs   []specChip
	Serving *fetchlog.RenderedStatus // the served rendered config's fetches
	// ByNodes counts Serving's fetches by Ignition clients: an admin's
	// curl is no node (the JSON lists every client).
	ByNodes uint64
	// Failing is why the pool's newest render failed, its own or the
	// whole render's: a load that fails fails every pool, which then
	// serves its last good render, and the table must not say ok.
	Failing string
}

type specChip struct {
	Version convert.Version
	Chosen  bool
	Blocked string // why it cannot be served; empty when it can
}

type refusedView struct {
	skewgate.Blocked
	Host, Ignition string
}

func newPage(st Status, now time.Time) *page {
	p := &page{Status: st, Now: now, CSS: template.CSS(pageCSS)}
	for _, ps := range st.Pools {
		v := newPoolView(ps)
		if e := st.LastError; v.Failing == "" && e != nil && len(e.Pools) == 0 {
			v.Failing = "the whole render fails: " + e.Message
		}
		p.Cards = append(p.Cards, v)
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == "BootImageSkew" {
			p.Skew = &st.Conditions[i]
			for _, b := range slices.Backward(st.Conditions[i].Recent) {
				p.Refused = append(p.Refused, newRefusedView(b))
			}
		}
	}
	p.Problems = problems(st, p.Refused, now)
	return p
}

func newPoolView(ps PoolStatus) poolView {
	v := poolView{PoolStatus: ps, Failing: ps.Error}
	for _, ver := range convert.OutputVersions {
		chip := specChip{Version: ver, Chosen: ver == ps.Spec}
		if !slices.Contains(ps.Servable, ver) {
			chip.Blocked = ps.Blocked[ver.String()]
			if chip.Blocked == "" {
				chip.Blocked = "not servable"
			}
		}
		v.Specs = append(v.Specs, chip)
	}
	for i := range ps.Fetches {
		if ps.Fetches[i].Serving {
			v.Serving = &ps.Fetches[i]
			for _, c := range v.Serving.Clients {
				if strings.HasPrefix(c.Ignition, "v") {
					v.ByNodes += c.Count
				}
			}
		}
	}
	return v
}

func newRefusedView(b skewgate.Blocked) refusedView {
	v := refusedView{Blocked: b, Host: hostOf(b.RemoteAddr), Ignition: b.Client}
	if iv, ok := skewgate.ParseUserAgent(b.Client); ok {
		v.Ignition = iv.String()
	}
	return v
}

// Problems lists what is wrong with st, worst first, as the page heads
// it at now.
func Problems(st Status, now time.Time) []Problem { return newPage(st, now).Problems }

// problems lists what is wrong, worst first: nothing served, a stuck load,
// failing renders, skipped files, a refused skew policy, waiting nodes,
// refused nodes.
func problems(st Status, refused []refusedView, now time.Time) []Problem {
	var out []Problem
	if !st.Ready {
		out = append(out, Problem{Title: "Nothing is served: no render has succeeded yet", Detail: "/config answers 503 and nodes retry until one does.", Anchor: "pools"})
	}
	if st.ReloadStuck != "" {
		title := "A load of the source is stuck; every pool serves its last good render"
		if !st.Ready {
			title = "A load of the source is stuck; nothing is served until a render succeeds"
		}
		out = append(out, Problem{Title: title, Detail: st.ReloadStuck, Anchor: "pools"})
	}
	out = append(out, renderProblems(st, now)...)
	if len(st.Warnings) > 0 {
		out = append(out, Problem{Warn: true, Anchor: "pools",
			Title:  fmt.Sprintf("The newest load skipped %d file(s) of the source", len(st.Warnings)),
			Detail: strings.Join(st.Warnings, "\n")})
	}
	if st.SkewPolicyError != "" {
		out = append(out, Problem{Title: "The source's boot-image skew policy was refused; the previous one stays in force", Detail: st.SkewPolicyError, Anchor: "skew"})
	}
	out = append(out, waitingProblems(st.Waiting, now)...)
	if len(refused) > 0 {
		pools := map[string]bool{}
		for _, r := range refused {
			pools[r.Pool] = true
		}
		latest := refused[0]
		out = append(out, Problem{Warn: true, Anchor: "skew",
			Title: fmt.Sprintf("%d recent node requests refused by the boot-image skew gate (pool %s); latest %s",
				len(refused), strings.Join(slices.Sorted(maps.Keys(pools)), ", "), ago(latest.Time, now)),
			Detail: "Latest: " + latest.Host + " (" + or(latest.Ignition, "unknown client") + "): " + latest.Reason + ", reference " + latest.ID})
	}
	return out
}

// waitingProblems names what keeps nodes retrying (docs/reliability.md's
// contract), the five most recent causes.
func waitingProblems(waiting []Waiting, now time.Time) []Problem {
	var out []Problem
	for i, w := range waiting {
		if i == 5 {
			out = append(out, Problem{Warn: true, Title: fmt.Sprintf("… and %d more causes of waiting nodes (see waiting in the JSON)", len(waiting)-i)})
			break
		}
		// Waiting for the first render or for a free slot ends by itself;
		// every other cause, once an admin fixes it.
		ends := "once it is fixed"
		if w.Cause == CauseNotReady || w.Cause == CauseOverloaded {
			ends = "once it passes"
		}
		out = append(out, Problem{Warn: true, Anchor: "pools",
			Title: fmt.Sprintf("Nodes wait, answered %d (%s) %s: %d requests from %d address(es), latest %s; they boot %s",
				w.Code, w.Cause, forPool(w.Pool), w.Requests, w.Clients, ago(w.Last, now), ends),
			Detail: w.Message})
	}
	return out
}

// renderProblems names each failing pool with what it serves instead; a
// failure of the whole render, or of a pool never rendered, is shown as is.
func renderProblems(st Status, now time.Time) []Problem {
	var out []Problem
	shown := map[string]bool{}
	for _, ps := range st.Pools {
		if ps.Error == "" {
			continue
		}
		shown[ps.Name] = true
		title := "Pool " + ps.Name + ": its newest render fails"
		if ps.ErrorSince != nil {
			title += " since " + timestamp(*ps.ErrorSince) + " (" + ago(*ps.ErrorSince, now) + ")"
		}
		out = append(out, Problem{Title: title + "; it serves its last good render, " + ps.Rendered, Detail: ps.Error, Anchor: "pool-" + ps.Name})
	}
	for _, f := range st.NodeFailures.Reports {
		out = append(out, Problem{Title: fmt.Sprintf("Node %s of pool %s failed its first boot at stage %s (%d reports, last %s)", f.Node, f.Pool, f.Stage, f.Count, ago(f.Last, now)),
			Detail: f.Message, Anchor: "node-failures"})
	}
	e := st.LastError
	if e == nil {
		return out
	}
	var unshown []string
	for _, p := range e.Pools {
		if !shown[p] {
			unshown = append(unshown, p)
		}
	}
	switch {
	case len(e.Pools) == 0:
		title := "Rendering fails since " + timestamp(e.Since) + " (" + ago(e.Since, now) + ")"
		if st.RenderedAt != nil {
			title += "; every pool serves the last good render, of " + timestamp(*st.RenderedAt)
		}
		out = append(out, Problem{Title: title, Detail: "Latest attempt " + timestamp(e.Time) + ":\n" + e.Message, Anchor: "pools"})
	case len(unshown) > 0:
		out = append(out, Problem{Title: "Never rendered, so nothing is served for pool " + strings.Join(unshown, ", "),
			Detail: e.Message})
	}
	return out
}

// forPool says which pool a waiting cause is for: "for pool worker", or
// "for every pool" when the cause is not one pool's (nothing served yet).
func forPool(pool string) string {
	if pool == "" || pool == "-" {
		return "for every pool"
	}
	return "for pool " + pool
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// deref lets the template pass a time or an optional (pointer) time.
func deref(t any) time.Time {
	switch t := t.(type) {
	case time.Time:
		return t
	case *time.Time:
		if t != nil {
			return *t
		}
	}
	return time.Time{}
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ago says how long before now t was.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	if now.Sub(t) < time.Second {
		return "just now"
	}
	return age(t, now) + " ago"
}

// age is the time from t to now, to the second under an hour.
func age(t, now time.Time) string {
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Hour:
		return d.Truncate(time.Second).String()
	case d < 48*time.Hour:
		return d.Truncate(time.Minute).String()
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}
