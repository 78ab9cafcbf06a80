package impact

import (
	"slices"
	"strconv"

	"github.com/ignition-mcs/mcs/render"
)

// specKind is a part of a pool's render outside the Ignition config's
// lists: kernel arguments, extensions and the MachineConfig's own fields.
type specKind struct {
	category string
	get      func(r *render.Result) set
	at       func(mc *render.MachineConfig, name string) ([]string, bool)
}

var specKinds = []specKind{
	{"kernelArguments", kernelArguments, func(mc *render.MachineConfig, arg string) ([]string, bool) {
		if slices.Contains(mc.Spec.KernelArguments, arg) {
			return []string{"spec", "kernelArguments", "~" + arg}, true
		}
		return []string{"spec", "config", "kernelArguments", "shouldExist", "~" + arg}, hasKarg(mc, "shouldExist", arg)
	}},
	{"kernelArgumentsShouldNotExist", func(r *render.Result) set {
		s := set{}
		for _, a := range r.Config.KernelArguments.ShouldNotExist {
			s[string(a)] = leaves{}
		}
		return s
	}, func(mc *render.MachineConfig, arg string) ([]string, bool) {
		return []string{"spec", "config", "kernelArguments", "shouldNotExist", "~" + arg}, hasKarg(mc, "shouldNotExist", arg)
	}},
	{"extensions", func(r *render.Result) set {
		s := set{}
		for _, e := range r.MachineConfig.Spec.Extensions {
			s[e] = leaves{}
		}
		return s
	}, func(mc *render.MachineConfig, ext string) ([]string, bool) {
		return []string{"spec", "extensions", "~" + ext}, slices.Contains(mc.Spec.Extensions, ext)
	}},
	scalar("kernelType", func(s render.MachineConfigSpec) string { return s.KernelType }),
	scalar("fips", func(s render.MachineConfigSpec) string { return strconv.FormatBool(s.FIPS) }),
	scalar("osImageURL", func(s render.MachineConfigSpec) string { return s.OSImageURL }),
	scalar("baseOSExtensionsContainerImage", func(s render.MachineConfigSpec) string { return s.BaseOSExtensionsContainerImage }),
}

// kernelArguments are OpenShift's and Ignition's (shouldExist) together:
// a node gets both.
func kernelArguments(r *render.Result) set {
	s := set{}
	for _, a := range r.MachineConfig.Spec.KernelArguments {
		s[a] = leaves{}
	}
	for _, a := range r.Config.KernelArguments.ShouldExist {
		s[string(a)] = leaves{}
	}
	return s
}

func hasKarg(mc *render.MachineConfig, list, arg string) bool {
	ka, _ := tree(mc.Spec.Config)["kernelArguments"].(map[string]any)
	l, _ := ka[list].([]any)
	return slices.Contains(l, any(arg))
}

// scalar is a field of the rendered MachineConfig's spec, always present;
// the MachineConfig behind it is the last that sets the value.
func scalar(name string, get func(render.MachineConfigSpec) string) specKind {
	return specKind{
		category: name,
		get: func(r *render.Result) set {
			return set{name: leaves{name: get(r.MachineConfig.Spec)}}
		},
		at: func(mc *render.MachineConfig, _ string) ([]string, bool) {
			v := get(mc.Spec)
			return []string{"spec", name}, v != "" && v != "false"
		},
	}
}
