package render

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
)

// errOptions is a render asked for with impossible bounds.
var errOptions = errors.New("invalid render options")

// DefaultMinSpec is the floor of the output spec: the oldest spec-3 release,
// which every boot image since OpenShift 4.6 reads.
var DefaultMinSpec = convert.V3_0

// Normalized returns o with the defaults filled in (MinSpec DefaultMinSpec,
// MaxSpec the newest spec), or an error wrapping errOptions when a bound is
// not an output spec or the bounds are crossed. Every render normalizes its
// options so; a source checks them with it before its first render.
func (o Options) Normalized() (Options, error) {
	if o.MinSpec.IsZero() {
		o.MinSpec = DefaultMinSpec
	}
	if o.MaxSpec.IsZero() {
		o.MaxSpec = convert.Newest
	}
	for _, v := range []struct {
		name string
		v    convert.Version
	}{{"minimum spec", o.MinSpec}, {"maximum spec", o.MaxSpec}, {"spec", o.Spec}} {
		if !v.v.IsZero() && !convert.IsOutputVersion(v.v) {
			return o, fmt.Errorf("%w: %s %s cannot be written: %w", errOptions, v.name, v.v, &convert.UnsupportedVersionError{Version: v.v.String(), Output: true})
		}
	}
	if o.MaxSpec.Less(o.MinSpec) {
		return o, fmt.Errorf("%w: maximum spec %s is below minimum spec %s", errOptions, o.MaxSpec, o.MinSpec)
	}
	return o, nil
}

// BoundFlags defines --min-spec and --max-spec on fs, writing o's bounds,
// with the defaults Normalized fills in (DefaultMinSpec, the newest spec)
// shown as theirs: mcs, its controller, render and render diff share them.
func (o *Options) BoundFlags(fs *flag.FlagSet, minUsage, maxUsage string) {
	o.MinSpec, o.MaxSpec = DefaultMinSpec, convert.Newest
	fs.Var(convert.OutputVersionFlag(&o.MinSpec), "min-spec", minUsage)
	fs.Var(convert.OutputVersionFlag(&o.MaxSpec), "max-spec", maxUsage)
}

// specFor is the spec a config that needs spec need is written at within
// the normalized o, and the ceiling no field of it may need more than.
func (o Options) specFor(need convert.Version) (target, ceiling convert.Version) {
	target, ceiling = need, o.MaxSpec
	if target.Less(o.MinSpec) {
		target = o.MinSpec
	}
	if !o.Spec.IsZero() {
		target, ceiling = o.Spec, o.Spec
	}
	if ceiling.Major == 2 && ceiling.Less(target) {
		// Spec 2.2 holds what 3.0 holds, bar what translate refuses.
		target = ceiling
	}
	return target, ceiling
}

// sizeProblem says why mc, rendered from order, cannot be stored, or
// returns nil. It is blamed on the MachineConfig whose Ignition config is
// largest, as that is the one to shrink, and names the next largest.
func sizeProblem(mc *MachineConfig, order []*entry, pool string) *Error {
	n, err := encodedSize(mc)
	if err != nil {
		return &Error{Object: KindMachineConfigPool + "/" + pool, Path: "$", Message: "encoding the rendered MachineConfig: " + err.Error(), Err: err}
	}
	if n <= maxRenderedSize {
		return nil
	}
	big := slices.Clone(order)
	slices.SortStableFunc(big, func(a, b *entry) int { return len(b.mc.Spec.Config) - len(a.mc.Spec.Config) })
	var sizes []string
	for _, e := range big[:min(3, len(big))] {
		sizes = append(sizes, fmt.Sprintf("%s %d", e.mc.Metadata.Name, len(e.mc.Spec.Config)))
	}
	top := big[0]
	return &Error{File: top.mc.Source, Line: top.doc.line("$.spec.config"), Object: KindMachineConfig + "/" + top.mc.Metadata.Name, Path: "$.spec.config",
		Message: fmt.Sprintf("pool %s's rendered MachineConfig %s would be %d bytes of JSON, above the limit of %d (1.5 MiB: what etcd stores in one object; OpenShift's limit too). "+
			"Largest Ignition configs, in bytes of JSON: %s. Shrink them: compress large files (contents.compression: gzip) or ship them another way (a container image)",
			pool, mc.Metadata.Name, n, maxRenderedSize, strings.Join(sizes, ", ")),
		Err: ErrInvalid}
}
