package impact

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

// WriteGitHub writes GitHub Actions workflow commands, one per finding, so
// a pull request shows each on the MachineConfig line that caused it: a
// spec raise, a ceiling or an era loss is an error when --fail-on names it
// and a warning otherwise; other changes are notices. Lines of the old tree
// alone carry no file: the pull request does not show it.
func WriteGitHub(w io.Writer, r *Report, failOn []string) error {
	b := bufio.NewWriter(w)
	level := func(cond string) string {
		if slices.Contains(failOn, cond) {
			return "error"
		}
		return "warning"
	}
	if !r.Changed {
		annotate(b, "notice", Location{}, "render diff", "no changes")
	}
	for _, p := range r.Pools {
		title := "pool " + p.Name
		switch p.Status {
		case Unchanged:
			continue
		case Added:
			annotate(b, "notice", p.At, title, fmt.Sprintf("added: %s at spec %s", p.Rendered.New, p.Spec.New))
		case Removed:
			annotate(b, "notice", p.At, title, fmt.Sprintf("removed (was %s at spec %s)", p.Rendered.Old, p.Spec.Old))
		}
		first := Location{}
		if p.Spec.Raised {
			added := addedReasons(p)
			for _, rs := range added {
				annotate(b, level("spec-raise"), rs.At, title, fmt.Sprintf("spec %s → %s: %s", p.Spec.Old, p.Spec.New, rs.Message+origin(rs.MachineConfig, Location{})))
			}
			if len(added) == 0 {
				annotate(b, level("spec-raise"), Location{}, title, fmt.Sprintf("spec %s → %s", p.Spec.Old, p.Spec.New))
			} else {
				first = newest(added).At
			}
		}
		if p.Status == Changed && !p.Spec.Raised && p.Spec.Old != p.Spec.New {
			annotate(b, "notice", Location{}, title, fmt.Sprintf("spec lowered %s → %s", p.Spec.Old, p.Spec.New))
		}
		if p.Spec.AboveCeiling {
			for _, rs := range p.Spec.Reasons {
				if above(rs.Spec, r.Ceiling) {
					annotate(b, level("ceiling"), rs.At, title, fmt.Sprintf("spec %s is above the ceiling %s: %s", p.Spec.New, r.Ceiling, rs.Message+origin(rs.MachineConfig, Location{})))
				}
			}
		}
		if lost := lostEras(p); lost != "" {
			annotate(b, level("era-loss"), first, title, lost)
		}
		if won := erasNamed(p, EraNewlyAdmitted); len(won) > 0 {
			annotate(b, "notice", Location{}, title, "nodes whose Ignition reads at most spec "+strings.Join(won, ", ")+" can join again")
		}
		for _, ch := range p.Changes {
			annotate(b, "notice", ch.At, title, ch.summary()+origin(ch.MachineConfig, Location{}))
		}
		for _, o := range p.Overrides {
			if o.New {
				annotate(b, "warning", o.At, title, "override: "+o.Message)
			}
		}
	}
	return b.Flush()
}

// newest is the reason needing the newest spec: the one that shuts out the
// most eras.
func newest(rs []*Reason) *Reason {
	best := rs[0]
	for _, r := range rs[1:] {
		if above(r.Spec, best.Spec) {
			best = r
		}
	}
	return best
}

func addedReasons(p *Pool) []*Reason {
	var out []*Reason
	for _, rs := range p.Spec.Reasons {
		if rs.Added {
			out = append(out, rs)
		}
	}
	return out
}

// lostEras names the eras newly refused and, when they are the oldest, the
// Ignition release from which nodes still join.
func lostEras(p *Pool) string {
	lost := erasNamed(p, EraNewlyRefused)
	if len(lost) == 0 {
		return ""
	}
	last := slices.IndexFunc(p.Eras, func(e *Era) bool { return e.Spec == lost[len(lost)-1] })
	s := "nodes whose Ignition reads at most spec " + strings.Join(lost, ", ")
	if len(lost) == last+1 && last+1 < len(p.Eras) {
		s += " (Ignition older than " + p.Eras[last+1].Ignition + ")"
	}
	return s + " can no longer join: they get the skew stub"
}

// erasNamed are the specs of the eras whose change is change.
func erasNamed(p *Pool, change EraChange) []string {
	var out []string
	for _, e := range p.Eras {
		if e.Change == change {
			out = append(out, e.Spec)
		}
	}
	return out
}

// annotate writes one workflow command; a location in the new tree becomes
// its file and line.
func annotate(b *bufio.Writer, level string, at Location, title, msg string) {
	props := []string{}
	if at.File != "" && at.Tree == "new" {
		props = append(props, "file="+escapeProperty(at.File))
		if at.Line > 0 {
			props = append(props, "line="+strconv.Itoa(at.Line))
			if at.Column > 0 {
				props = append(props, "col="+strconv.Itoa(at.Column))
			}
		}
	}
	props = append(props, "title="+escapeProperty(title))
	fmt.Fprintf(b, "::%s %s::%s\n", level, strings.Join(props, ","), escapeData(msg))
}

// escapeData and escapeProperty are the workflow command escapes.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// above reports whether spec is newer than ceiling.
func above(spec, ceiling string) bool {
	s, err1 := convert.ParseVersion(spec)
	c, err2 := convert.ParseVersion(ceiling)
	return err1 == nil && err2 == nil && c.Less(s)
}

// WriteGitHubErrors writes err, a tree render diff could not load or
// render, as one error workflow command per problem, on the file, line and
// column it names (a typo fails most CI runs: the pull request shows it
// where it was typed). Problems without a file are errors of the run.
func WriteGitHubErrors(w io.Writer, err error) error {
	b := bufio.NewWriter(w)
	var es *render.Errors
	if !errors.As(err, &es) {
		annotate(b, "error", Location{}, "render diff", err.Error())
		return b.Flush()
	}
	for _, e := range es.List {
		var props []string
		if e.File != "" {
			props = append(props, "file="+escapeProperty(e.File))
			if e.Line > 0 {
				props = append(props, "line="+strconv.Itoa(e.Line))
				if e.Column > 0 {
					props = append(props, "col="+strconv.Itoa(e.Column))
				}
			}
		}
		title := "render diff: invalid input"
		if e.Object != "" {
			title += ": " + e.Object
		}
		props = append(props, "title="+escapeProperty(title))
		msg := e.Message
		if p := e.Path.String(); p != "" {
			msg = p + ": " + msg
		}
		fmt.Fprintf(b, "::error %s::%s\n", strings.Join(props, ","), escapeData(msg))
	}
	return b.Flush()
}
