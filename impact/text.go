package impact

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteJSON writes the report as one indented JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the report for people: each pool that changed, what
// forces its spec, what changed in it and what each Ignition era gets;
// then the --fail-on conditions that hold.
func WriteText(w io.Writer, r *Report, failOn []string) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "render diff %s → %s\n", r.Old, r.New)
	if !r.Changed {
		names := make([]string, len(r.Pools))
		for i, p := range r.Pools {
			names[i] = p.Name
		}
		fmt.Fprintf(b, "no changes (pools: %s)\n", strings.Join(names, ", "))
	}
	for _, p := range r.Pools {
		if p.Status != Unchanged {
			writePool(b, p, r.Ceiling)
		}
	}
	if r.Changed {
		fmt.Fprintf(b, "summary: %s\n", summary(r))
	}
	for _, c := range r.Failing(failOn) {
		fmt.Fprintf(b, "fail-on: %s holds\n", c)
	}
	return b.Flush()
}

func summary(r *Report) string {
	count := map[Status]int{}
	for _, p := range r.Pools {
		count[p.Status]++
	}
	s := fmt.Sprintf("%d changed, %d added, %d removed, %d unchanged", count[Changed], count[Added], count[Removed], count[Unchanged])
	var holds []string
	for _, c := range Conditions {
		if r.Holds.hold(c) {
			holds = append(holds, c)
		}
	}
	if len(holds) > 0 {
		s += "; " + strings.Join(holds, ", ")
	}
	return s
}

func writePool(b *bufio.Writer, p *Pool, ceiling string) {
	switch p.Status {
	case Added:
		fmt.Fprintf(b, "pool %s: added%s: %s at spec %s\n", p.Name, where(p.At), p.Rendered.New, p.Spec.New)
	case Removed:
		fmt.Fprintf(b, "pool %s: removed%s (was %s at spec %s)\n", p.Name, where(p.At), p.Rendered.Old, p.Spec.Old)
	default:
		fmt.Fprintf(b, "pool %s: %s → %s\n", p.Name, p.Rendered.Old, p.Rendered.New)
	}
	if p.Status == Changed {
		note := "unchanged"
		if p.Spec.Raised {
			note = "raised"
		} else if p.Spec.Old != p.Spec.New {
			note = "lowered"
		}
		fmt.Fprintf(b, "  spec %s → %s (%s)\n", p.Spec.Old, p.Spec.New, note)
	}
	if p.Spec.AboveCeiling {
		fmt.Fprintf(b, "  spec %s is above the ceiling %s: nodes that read only up to %s cannot read it\n", p.Spec.New, ceiling, ceiling)
	}
	if p.Status != Removed && len(p.Spec.Reasons) > 0 {
		fmt.Fprintf(b, "  fields that need more than spec 3.0.0 (+ new):\n")
		for _, rs := range p.Spec.Reasons {
			mark := " "
			if rs.Added {
				mark = "+"
			}
			fmt.Fprintf(b, "    %s %s\n", mark, rs.describe())
		}
	}
	for _, rs := range p.Spec.Dropped {
		fmt.Fprintf(b, "    - %s\n", rs.describe())
	}
	if len(p.Changes) > 0 {
		fmt.Fprintf(b, "  changes:\n")
		for _, ch := range p.Changes {
			fmt.Fprintf(b, "    %s %s%s%s\n", opMark[ch.Op], ch.subject(), origin(ch.MachineConfig, ch.At), fromLocal(ch.Local))
			for _, f := range ch.Fields {
				fmt.Fprintf(b, "        %s\n", f.describe())
			}
		}
	}
	if len(p.Overrides) > 0 {
		fmt.Fprintf(b, "  overridden by a later MachineConfig, which wins (+ new):\n")
		for _, o := range p.Overrides {
			mark := " "
			if o.New {
				mark = "+"
			}
			fmt.Fprintf(b, "    %s %s\n", mark, o.Message)
		}
	}
	writeEras(b, p.Eras)
}

// writeEras prints each era's outcome, or one line when they all fared
// alike and none changed.
func writeEras(b *bufio.Writer, eras []*Era) {
	if len(eras) == 0 {
		return
	}
	same := true
	for _, e := range eras {
		same = same && e.Change == eras[0].Change && e.Change != EraNewlyRefused && e.Change != EraNewlyAdmitted
	}
	if same {
		fmt.Fprintf(b, "  Ignition eras: every one %s (spec %s to %s)\n", strings.ReplaceAll(string(eras[0].Change), "-", " "), eras[0].Spec, eras[len(eras)-1].Spec)
		return
	}
	fmt.Fprintf(b, "  Ignition eras (the spec each reads, the Ignition release asked as):\n")
	for _, e := range eras {
		fmt.Fprintf(b, "    %s\n", e.describe())
	}
}

var opMark = map[Status]string{Added: "+", Removed: "-", Changed: "~"}

// nouns name one thing of each category.
var nouns = map[string]string{
	"files": "file", "directories": "directory", "links": "link", "units": "unit", "users": "user",
	"sshKeys": "ssh key",
	"groups":  "group", "disks": "disk", "raid": "raid array", "filesystems": "filesystem", "luks": "LUKS volume",
	"ignition": "ignition section", "kernelArguments": "kernel argument",
	"kernelArgumentsShouldNotExist": "kernel argument to remove (shouldNotExist)", "extensions": "extension",
}

func (ch *Change) subject() string {
	if n, ok := nouns[ch.Category]; ok {
		if ch.Category == "ignition" {
			return n
		}
		return n + " " + ch.Name
	}
	return ch.Name // the MachineConfig's own fields
}

// summary is the change on one line.
func (ch *Change) summary() string {
	s := ch.subject() + " " + string(ch.Op)
	if len(ch.Fields) == 0 {
		return s
	}
	parts := make([]string, len(ch.Fields))
	for i, f := range ch.Fields {
		parts[i] = f.describe()
	}
	return s + ": " + strings.Join(parts, "; ")
}

func origin(mc string, at Location) string {
	if mc == "" {
		return ""
	}
	return " (MachineConfig " + mc + where(at) + ")"
}

// fromLocal names the local file a thing's contents came from, or "".
func fromLocal(local string) string {
	if local == "" {
		return ""
	}
	return ", contents from " + local
}

// where is " in FILE:LINE", or "" without a file.
func where(at Location) string {
	if at.File == "" {
		return ""
	}
	s := " in " + at.File
	if at.Line > 0 {
		s += ":" + strconv.Itoa(at.Line)
	}
	return s
}

func (f *Field) describe() string {
	return f.Field + ": " + f.Old.String() + " → " + f.New.String()
}

// String prints a value; contents as size and a short digest.
func (v *Value) String() string {
	switch {
	case v == nil:
		return "(none)"
	case v.Size != nil:
		return fmt.Sprintf("%d bytes sha256:%.12s", *v.Size, v.SHA256)
	}
	return v.Text
}

func (r *Reason) describe() string { return r.Message + origin(r.MachineConfig, r.At) }

func (e *Era) describe() string {
	return fmt.Sprintf("spec %s (Ignition %s): %s → %s%s", e.Spec, e.Ignition, e.Old.String(), e.New.String(), eraNote[e.Change])
}

var eraNote = map[EraChange]string{EraNewlyRefused: "  NEWLY REFUSED", EraNewlyAdmitted: "  newly admitted"}

// String is what a node got: a config at a spec, the stub, or an error.
func (o *Outcome) String() string {
	switch {
	case o == nil:
		return "(no pool)"
	case o.Admitted:
		return "config at " + o.Spec
	case o.Reason != "":
		return "stub (" + o.Reason + ")"
	}
	return "HTTP " + strconv.Itoa(o.Status)
}
