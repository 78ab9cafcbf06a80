package render

import (
	"errors"
	"fmt"

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
