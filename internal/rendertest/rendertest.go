// Package rendertest renders one-MachineConfig pools for the tests of the packages that serve renders.
package rendertest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/render"
)

// SharedIgn holds a file large enough to be held out of encoding.
var SharedIgn = `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/big","contents":{"source":"data:,` +
	strings.Repeat("x", 4096) + `"}}]}}`

// Result renders ign as the pool's only MachineConfig, 99-<pool>, with
// kargs, through the renderer: the result has every field a render sets.
func Result(t testing.TB, pool, ign string, kargs ...string) *render.Result {
	t.Helper()
	mc, err := json.Marshal(map[string]any{
		"apiVersion": render.APIVersion, "kind": render.KindMachineConfig,
		"metadata": map[string]any{"name": "99-" + pool, "labels": map[string]string{"machineconfiguration.openshift.io/role": pool}},
		"spec":     map[string]any{"config": json.RawMessage(ign), "kernelArguments": kargs},
	})
	if err != nil {
		t.Fatal(err)
	}
	var l render.Loader
	l.Data("in/99-"+pool+".json", mc)
	if pool != "master" && pool != "worker" {
		l.Data("in/pool-"+pool+".yaml", []byte("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: "+pool+
			"}\nspec:\n  machineConfigSelector:\n    matchLabels: {machineconfiguration.openshift.io/role: "+pool+"}\n"))
	}
	set, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	res, err := set.RenderPool(pool, render.Options{})
	if err != nil {
		t.Fatalf("render %s: %v", pool, err)
	}
	return res
}
