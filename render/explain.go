package render

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Explain writes, for people, why the result has the spec it has, field by
// field, and which MachineConfig supplied each file, unit, user and kernel
// argument. The text is deterministic.
func (r *Result) Explain(w io.Writer) error {
	b := bufio.NewWriter(w)
	o := r.Options
	fmt.Fprintf(b, "pool %s: %s at spec %s\n", r.Pool, r.Name, r.Spec)
	switch {
	case !o.Spec.IsZero():
		fmt.Fprintf(b, "  spec %s was forced; the merged config needs %s\n", r.Spec, r.MinSpec)
	case r.Spec == r.MinSpec:
		fmt.Fprintf(b, "  spec %s is the lowest that can express the merged config (floor %s, ceiling %s)\n", r.Spec, o.MinSpec, o.MaxSpec)
	case r.MinSpec.Less(r.Spec) && r.MinSpec.Less(o.MinSpec):
		fmt.Fprintf(b, "  the merged config needs only spec %s; the floor raises it to %s (ceiling %s)\n", r.MinSpec, r.Spec, o.MaxSpec)
	case r.MinSpec.Less(r.Spec):
		fmt.Fprintf(b, "  the merged config needs only spec %s; OpenShift's own readers read it as written only from %s (ceiling %s)\n", r.MinSpec, r.Spec, o.MaxSpec)
	default:
		fmt.Fprintf(b, "  spec %s holds everything spec %s does that this config uses (ceiling %s)\n", r.Spec, r.MinSpec, o.MaxSpec)
	}
	if len(r.Reasons) == 0 {
		fmt.Fprintf(b, "  nothing in it needs more than spec 3.0.0\n")
	} else {
		fmt.Fprintf(b, "  fields that need more than spec 3.0.0:\n")
		for _, rs := range r.Reasons {
			fmt.Fprintf(b, "    %s\n", rs.describe())
		}
	}
	fmt.Fprintf(b, "  merged in order: %s\n", strings.Join(r.MachineConfigs, ", "))
	section(b, "files", "file", r.Provenance.Files, r.Overrides)
	section(b, "directories", "directory", r.Provenance.Directories, r.Overrides)
	section(b, "links", "link", r.Provenance.Links, r.Overrides)
	section(b, "units", "unit", r.Provenance.Units, r.Overrides)
	section(b, "users", "user", r.Provenance.Users, r.Overrides)
	if len(r.Overrides) > 0 {
		fmt.Fprintf(b, "  overridden (a later MachineConfig replaced an earlier one's):\n")
		for _, o := range r.Overrides {
			fmt.Fprintf(b, "    %s\n", o)
		}
	}
	if mc := r.MachineConfig; mc != nil {
		s := mc.Spec
		if len(s.KernelArguments) > 0 {
			fmt.Fprintf(b, "  kernel arguments:\n")
			for _, a := range s.KernelArguments {
				fmt.Fprintf(b, "    %s: %s\n", a, r.Provenance.KernelArguments[a])
			}
		}
		exts := "none"
		if len(s.Extensions) > 0 {
			exts = strings.Join(s.Extensions, ", ")
		}
		fmt.Fprintf(b, "  kernelType %s, fips %t, extensions %s\n", s.KernelType, s.FIPS, exts)
		fmt.Fprintf(b, "  osImageURL %s\n", orNone(s.OSImageURL))
		fmt.Fprintf(b, "  baseOSExtensionsContainerImage %s\n", orNone(s.BaseOSExtensionsContainerImage))
	}
	return b.Flush()
}

// section lists what each MachineConfig supplied: the one whose entry
// (for a file or unit, whose contents) is rendered, and the fields a later
// one amended, so that no line credits whole what an override notice says
// was partly replaced.
func section(b *bufio.Writer, title, kind string, m map[string]string, overrides []Override) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Fprintf(b, "  %s:\n", title)
	for _, k := range keys {
		fmt.Fprintf(b, "    %s: %s%s\n", k, m[k], amended(overrides, kind, k, m[k]))
	}
}

// amended is " (mode from 60-b)": the fields of a thing set over the
// credited MachineConfig's by a later one, or "".
func amended(overrides []Override, kind, name, credited string) string {
	var parts []string
	for _, o := range overrides {
		if o.Kind == kind && o.Name == name && o.By != credited {
			parts = append(parts, strings.Join(o.Fields, ", ")+" from "+o.By)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// describe prints a reason with where it came from.
func (r Reason) describe() string {
	s := r.Reason.String()
	if r.MachineConfig == "" {
		return s
	}
	where := "MachineConfig " + r.MachineConfig
	if r.Source != "" {
		where += " in " + r.Source
		if r.Line > 0 {
			where += ":" + strconv.Itoa(r.Line)
		}
	}
	if !r.ConfigPath.IsZero() {
		where += " at " + r.ConfigPath.String()
	}
	return s + " (" + where + ")"
}

// ExplainFailure writes, for people, why each pool that failed on its
// spec ceiling in err could not be written: the spec it needs and the
// fields, with the MachineConfig of each, that need more than the ceiling.
// Other failures are explained by their errors alone.
func ExplainFailure(w io.Writer, err error) {
	b := bufio.NewWriter(w)
	seen := map[*specCeilingError]bool{}
	var es *Errors
	if !errors.As(err, &es) {
		return
	}
	for _, x := range es.List {
		var ce *specCeilingError
		if !errors.As(x, &ce) || seen[ce] {
			continue
		}
		seen[ce] = true
		fmt.Fprintf(b, "pool %s: not rendered: it needs spec %s, above the ceiling %s\n", ce.Pool, ce.Needs, ce.Ceiling)
		fmt.Fprintf(b, "  fields that need more than spec %s:\n", ce.Ceiling)
		for _, rs := range ce.Reasons {
			fmt.Fprintf(b, "    %s\n", rs.describe())
		}
	}
	b.Flush()
}
