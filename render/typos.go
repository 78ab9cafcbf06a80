package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/text"
)

// group is the API group of every kind render reads.
const group = "machineconfiguration.openshift.io"

// renderedKinds are the kinds render reads; otherKinds the rest of the
// group's, skipped with a notice as not used for rendering.
var (
	renderedKinds = []string{KindMachineConfig, KindMachineConfigPool, kindControllerConfig, kindOSImageStream}
	otherKinds    = []string{"KubeletConfig", "ContainerRuntimeConfig", "MachineConfigNode", "MachineOSConfig",
		"MachineOSBuild", "PinnedImageSet", "MachineConfiguration"}
)

// kindTypo is the error for an object whose kind or apiVersion is a typo
// of one render reads (kind: MachineConfg), or nil. Skipped with a notice,
// such an object would drop its content from every pool without failing.
func kindTypo(o rawObject) *Error {
	if slices.Contains(otherKinds, o.Kind) {
		return nil
	}
	g, _, _ := strings.Cut(o.APIVersion, "/")
	if slices.Contains(renderedKinds, o.Kind) {
		if m := text.Near(g, []string{group}); m != "" {
			x := o.problem(fmt.Sprintf("unknown apiVersion %s (did you mean %s/v1?): refused rather than skipped, which would drop this %s from every pool", o.APIVersion, m, o.Kind), ErrInvalid)
			x.Path = convert.NewPath("apiVersion")
			x.Line, x.Column = o.doc.pos(x.Path)
			return x
		}
		return nil
	}
	m := text.Near(o.Kind, renderedKinds)
	if m == "" && g != group {
		return nil
	}
	msg := "unknown kind " + o.Kind
	if m != "" {
		msg += " (did you mean " + m + "?)"
	}
	msg += ": render reads " + strings.Join(renderedKinds[:len(renderedKinds)-1], ", ") + " and " + renderedKinds[len(renderedKinds)-1] +
		"; refused rather than skipped, which would drop what it holds from every pool"
	x := o.problem(msg, ErrInvalid)
	x.Path = convert.NewPath("kind")
	x.Line, x.Column = o.doc.pos(x.Path)
	return x
}

// orphan is the problem of a MachineConfig no pool selects: a notice, or
// in files an error when one of its labels is a typo of what a pool selects
// (role: wroker), which would leave it out of the pool without a word.
func orphan(e *entry, selectors map[string][]string, fromAPIServer bool) (x *Error, isErr bool) {
	x = &Error{File: e.mc.Source, Line: e.doc.line(convert.NewPath("metadata", "labels")), Object: KindMachineConfig + "/" + e.mc.Metadata.Name,
		Path: convert.NewPath("metadata", "labels"), Message: "notice: no pool selects this MachineConfig; it is not rendered"}
	key, typo := labelTypo(e.mc.Metadata.Labels, selectors)
	if typo == "" {
		return x, false
	}
	x.Path = convert.NewPath("metadata", "labels", key)
	x.Line, x.Column = e.doc.pos(x.Path)
	if fromAPIServer {
		x.Message = "notice: " + typo + ": no pool selects this MachineConfig; it is not rendered"
		return x, false
	}
	x.Message = typo + ": no pool selects this MachineConfig; refused rather than left out of its pool"
	x.Err = ErrInvalid
	return x, true
}

// selectors are the labels each pool selects by, key to the values it
// accepts; a tree without pools has both default pools' even when one was
// not made.
func selectors(pools []*MachineConfigPool, defaulted bool) map[string][]string {
	if defaulted {
		pools = defaultPools()
	}
	out := map[string][]string{}
	for _, p := range pools {
		sel := p.Spec.MachineConfigSelector
		if sel == nil {
			continue
		}
		for k, v := range sel.MatchLabels {
			out[k] = append(out[k], v)
		}
		for _, r := range sel.MatchExpressions {
			if r.Operator == opIn {
				out[r.Key] = append(out[r.Key], r.Values...)
			}
		}
	}
	return out
}

// labelTypo says which label is a typo of a key or value in selectors,
// and what was meant; "" when none is.
func labelTypo(labels map[string]string, selectors map[string][]string) (key, msg string) {
	keys := slices.Sorted(maps.Keys(selectors))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		if want, ok := selectors[k]; ok {
			if m := text.Near(v, want); m != "" {
				return k, fmt.Sprintf("label %s: %s (did you mean %s?)", k, v, m)
			}
			continue
		}
		if m := text.Near(k, keys); m != "" {
			return k, fmt.Sprintf("label %s (did you mean %s?)", k, m)
		}
	}
	return "", ""
}
