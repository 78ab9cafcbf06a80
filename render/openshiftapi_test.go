package render

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fields this package knows a MachineConfig, a pool and their metadata
// to hold are openshift/api's, read off its types: a field the API adds
// fails here until it is known (and a typo of it is no longer refused as
// one), and one it drops, until it is forgotten.
func TestKnownFieldsAreOpenShiftAPIs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		typ   reflect.Type
		known []string
	}{
		{"MachineConfig", reflect.TypeFor[mcfgv1.MachineConfig](), knownTop},
		{"MachineConfigPool", reflect.TypeFor[mcfgv1.MachineConfigPool](), knownTop},
		{"ObjectMeta", reflect.TypeFor[metav1.ObjectMeta](), knownMeta},
		{"MachineConfigSpec", reflect.TypeFor[mcfgv1.MachineConfigSpec](), knownSpec},
		{"MachineConfigPoolSpec", reflect.TypeFor[mcfgv1.MachineConfigPoolSpec](), knownPoolSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := jsonFields(tc.typ)
			want := slices.Sorted(slices.Values(tc.known))
			if tc.name == "MachineConfig" {
				// A MachineConfig has no status; knownTop is shared with pools,
				// whose status a cluster writes.
				got = slices.Sorted(slices.Values(append(got, "status")))
			}
			if !slices.Equal(got, want) {
				t.Errorf("openshift/api's %s has %v; this package knows %v", tc.name, got, want)
			}
		})
	}
}

// jsonFields are the JSON names of t's fields, inline structs flattened,
// sorted.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case strings.Contains(opts, "inline") || (name == "" && f.Anonymous):
			out = append(out, jsonFields(f.Type)...)
		case name != "":
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
