// Package rendertest renders one-MachineConfig pools and scripts a source's loads for the tests of the packages that serve renders.
package rendertest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source"
)

// PlainIgn is a spec 3.0 config of a file and a unit; KargsIgn one that
// needs spec 3.3 for its kernel arguments.
const (
	PlainIgn = `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/hello","mode":420,"overwrite":true,"contents":{"source":"data:,hello"}}]},"systemd":{"units":[{"name":"hello.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]}}`
	KargsIgn = `{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["nosmt","mitigations=auto"]},"storage":{"files":[{"path":"/etc/k","contents":{"source":"data:,k"}}]}}`
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

// Source is a source.Source whose loads return Loads in turn.
type Source struct {
	Loads []Load
	n     int
}

// Load is what one load of a Source returns.
type Load struct {
	In  *source.Input
	Err error
}

// Load returns the next of s.Loads.
func (s *Source) Load(context.Context) (*source.Input, error) {
	l := s.Loads[s.n]
	s.n++
	return l.In, l.Err
}

// Watch sees no change until ctx ends.
func (s *Source) Watch(ctx context.Context, _ chan<- struct{}) { <-ctx.Done() }

func (s *Source) String() string { return "test inputs" }
