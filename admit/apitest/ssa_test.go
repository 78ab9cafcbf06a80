package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
)

// manifests are a realdata set's MachineConfigs as a Git repository holds
// them (what the API server sets dropped), those with a config only: the
// rendered and generated ones at 3.5.0, a few at the 3.1 and 3.2 specs their
// operator wrote them at.
func manifests(t *testing.T, set string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range realdataObjects(t, set) {
		if storedVersion(o) == "" {
			continue
		}
		spec := map[string]any{}
		for k, v := range o.Object["spec"].(map[string]any) {
			if v != nil { // a null the API server refuses in an apply
				spec[k] = v
			}
		}
		m := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
			"metadata": map[string]any{"name": o.GetName()},
			"spec":     spec,
		}}
		m.SetLabels(o.GetLabels())
		out = append(out, m)
	}
	return out
}

// serverSideApply is a server-side apply of o as manager, without force.
func serverSideApply(ctx context.Context, d dynamic.Interface, o *unstructured.Unstructured, manager string, dryRun bool) (*unstructured.Unstructured, error) {
	opts := metav1.ApplyOptions{FieldManager: manager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return d.Resource(machineConfigs).Apply(ctx, o.GetName(), o, opts)
}

// lowered is the config the webhook stores for o's.
func lowered(t *testing.T, o *unstructured.Unstructured) *admit.Result {
	t.Helper()
	res, err := admit.Lower(configOf(o), convert.Version{})
	if err != nil {
		t.Fatalf("%s: %v", o.GetName(), err)
	}
	return res
}

// TestServerSideApplyManagers applies OpenShift's MachineConfigs at their
// specs as GitOps tools do: server-side, each manager without force. Each
// is stored at its lowest spec; the first manager's re-apply writes
// nothing; a second manager's apply of the same manifest merges without
// conflict (it conflicted over .spec.config.ignition.version while the
// first owned it at a value it never applied), and its own re-apply writes
// nothing; a dry run, by either or by a third, is the object stored. No
// manager owns a field of spec.config at another value than it applied.
func TestServerSideApplyManagers(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	t.Cleanup(func() { s.cp.DeleteAll(t, machineConfigs) })
	d := s.cp.Dynamic
	objs := manifests(t, "aws")
	rewritten := 0
	for _, o := range objs {
		name, want := o.GetName(), lowered(t, o)
		if want.Changed() {
			rewritten++
		}
		first, err := serverSideApply(ctx, d, o, "gitops-a", false)
		if err != nil {
			t.Fatalf("%s: first apply: %v", name, err)
		}
		if got := string(configOf(first)); got != jsonCanonical(t, want.Config) {
			t.Errorf("%s: stored %.200s, want the lowered %.200s", name, got, want.Config)
		}
		rv := first.GetResourceVersion()
		for _, step := range []struct {
			manager string
			written bool
		}{{"gitops-a", false}, {"gitops-b", true}, {"gitops-b", false}, {"gitops-a", false}} {
			got, err := serverSideApply(ctx, d, o, step.manager, false)
			if err != nil {
				t.Fatalf("%s: apply by %s after the first: %v", name, step.manager, err)
			}
			if written := got.GetResourceVersion() != rv; written != step.written {
				t.Errorf("%s: apply by %s wrote %v, want %v (resourceVersion %s → %s)", name, step.manager, written, step.written, rv, got.GetResourceVersion())
			}
			rv = got.GetResourceVersion()
		}
		stored := get(t, d, name)
		if v := storedVersion(stored); v != want.Stored.String() {
			t.Errorf("%s: stored at %s after both managers, want %s", name, v, want.Stored)
		}
		checkOwnedAsApplied(t, stored, o)
		for _, manager := range []string{"gitops-a", "gitops-b", "gitops-c"} {
			dry, err := serverSideApply(ctx, d, o, manager, true)
			if err != nil {
				t.Fatalf("%s: dry-run apply by %s: %v", name, manager, err)
			}
			if manager == "gitops-c" { // a new manager: its entry is new
				dry.SetManagedFields(stored.GetManagedFields())
			}
			if !reflect.DeepEqual(dry.Object, stored.Object) {
				t.Errorf("%s: a dry-run apply by %s is not the object stored:\n%s\nstored:\n%s", name, manager, brief(dry), brief(stored))
			}
		}
	}
	if rewritten < 10 {
		t.Fatalf("only %d of %d manifests rewritten: the test would not see the conflict", rewritten, len(objs))
	}
}

// TestClientSideThenServerSide moves MachineConfigs from client-side
// apply (an update, as kubectl's client-side apply writes) to server-side
// apply by another manager, and changes one the same way: no conflict.
func TestClientSideThenServerSide(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	t.Cleanup(func() { s.cp.DeleteAll(t, machineConfigs) })
	res := s.cp.Dynamic.Resource(machineConfigs)
	for _, o := range manifests(t, "aws") {
		name := o.GetName()
		created, err := res.Create(ctx, o, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rv := created.GetResourceVersion()
		got, err := serverSideApply(ctx, s.cp.Dynamic, o, "kubectl", false)
		if err != nil {
			t.Fatalf("%s: server-side apply after client-side: %v", name, err)
		}
		if storedVersion(got) != storedVersion(created) {
			t.Errorf("%s: stored at %s, then %s", name, storedVersion(created), storedVersion(got))
		}
		if got.GetResourceVersion() == rv {
			t.Errorf("%s: a new manager's apply wrote nothing", name)
		}
		checkOwnedAsApplied(t, got, o)
	}
	// A change made client-side (a merge patch, as kubectl's client-side
	// apply sends for a custom resource), then applied server-side.
	name := "99-worker-ssh"
	patch := `{"spec":{"config":{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA changed"]}]}}}}`
	if _, err := res.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	o := get(t, s.cp.Dynamic, name)
	manifest := &unstructured.Unstructured{Object: map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(), "metadata": map[string]any{"name": name}, "spec": o.Object["spec"]}}
	if err := unstructured.SetNestedField(manifest.Object, "3.5.0", "spec", "config", "ignition", "version"); err != nil {
		t.Fatal(err)
	}
	got, err := serverSideApply(ctx, s.cp.Dynamic, manifest, "kubectl", false)
	if err != nil {
		t.Fatalf("server-side apply of the change made client-side: %v", err)
	}
	if v := storedVersion(got); v != "3.0.0" {
		t.Errorf("stored at %s", v)
	}
	checkOwnedAsApplied(t, got, manifest)
}

// TestApplyLowestByteForByte: a manifest already at its lowest spec (as
// `render lower` writes it) is stored as applied, byte for byte (the API
// server's JSON of it), and its appliers own what they applied, the
// version included: the webhook changes nothing.
func TestApplyLowestByteForByte(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	t.Cleanup(func() { s.cp.DeleteAll(t, machineConfigs) })
	for _, o := range manifests(t, "aws") {
		name, res := o.GetName(), lowered(t, o)
		var cfg map[string]any
		if err := json.Unmarshal(res.Config, &cfg); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(o.Object, cfg, "spec", "config"); err != nil {
			t.Fatal(err)
		}
		first, err := serverSideApply(ctx, s.cp.Dynamic, o, "gitops-a", false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		second, err := serverSideApply(ctx, s.cp.Dynamic, o, "gitops-b", false)
		if err != nil {
			t.Fatalf("%s: second manager: %v", name, err)
		}
		if got, want := string(configOf(second)), jsonCanonical(t, res.Config); got != want {
			t.Errorf("%s: stored %.200s, want as applied %.200s", name, got, want)
		}
		if !reflect.DeepEqual(first.Object["spec"], second.Object["spec"]) {
			t.Errorf("%s: the second apply changed the spec", name)
		}
		for _, m := range second.GetManagedFields() {
			if !ownsVersion(t, m) {
				t.Errorf("%s: %s does not own the version it applied: %s", name, m.Manager, m.FieldsV1.Raw)
			}
		}
		checkOwnedAsApplied(t, second, o)
	}
}

// checkOwnedAsApplied checks that no manager owns a field of spec.config
// at another value than applied's (each applied the same manifest), nor
// one applied does not hold.
func checkOwnedAsApplied(t *testing.T, stored, applied *unstructured.Unstructured) {
	t.Helper()
	sc, _, _ := unstructured.NestedFieldNoCopy(stored.Object, "spec", "config")
	ac, _, _ := unstructured.NestedFieldNoCopy(applied.Object, "spec", "config")
	for _, m := range stored.GetManagedFields() {
		var fields map[string]any
		if m.FieldsV1 == nil || json.Unmarshal(m.FieldsV1.Raw, &fields) != nil {
			t.Fatalf("%s: managedFields entry of %s: %v", stored.GetName(), m.Manager, m.FieldsV1)
		}
		spec, _ := fields["f:spec"].(map[string]any)
		cfg, ok := spec["f:config"].(map[string]any)
		if !ok {
			continue
		}
		if bad := ownedOtherwise(cfg, sc, ac, ".spec.config"); len(bad) > 0 {
			sort.Strings(bad)
			t.Errorf("%s: %s owns %s at a value it did not apply", stored.GetName(), m.Manager, strings.Join(bad, ", "))
		}
	}
}

// ownedOtherwise are the fields owned in FieldsV1 fields whose values in
// stored and applied differ.
func ownedOtherwise(fields map[string]any, stored, applied any, path string) []string {
	var out []string
	for k, sub := range fields {
		name, ok := strings.CutPrefix(k, "f:")
		if !ok {
			continue // ".": the object itself
		}
		sm, _ := stored.(map[string]any)
		am, _ := applied.(map[string]any)
		sv, sok := sm[name]
		av, aok := am[name]
		below, _ := sub.(map[string]any)
		_, svMap := sv.(map[string]any)
		_, avMap := av.(map[string]any)
		switch {
		case !sok || !aok:
			out = append(out, path+"."+name)
		case svMap && avMap && hasMembers(below):
			out = append(out, ownedOtherwise(below, sv, av, path+"."+name)...)
		case svMap && avMap: // the object itself, not its members
		case !sameValue(sv, av):
			out = append(out, path+"."+name)
		}
	}
	return out
}

// sameValue compares decoded JSON values as JSON: the manifests' numbers
// are float64, the API server's int64.
func sameValue(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func hasMembers(fields map[string]any) bool {
	for k := range fields {
		if strings.HasPrefix(k, "f:") {
			return true
		}
	}
	return false
}

func ownsVersion(t *testing.T, m metav1.ManagedFieldsEntry) bool {
	t.Helper()
	var f struct {
		Spec struct {
			Config struct {
				Ignition struct {
					Version *struct{} `json:"f:version"`
				} `json:"f:ignition"`
			} `json:"f:config"`
		} `json:"f:spec"`
	}
	if err := json.Unmarshal(m.FieldsV1.Raw, &f); err != nil {
		t.Fatal(err)
	}
	return f.Spec.Config.Ignition.Version != nil
}

// brief is an object without its spec.config, and its spec.config's size
// and version, for a failure message.
func brief(o *unstructured.Unstructured) string {
	c := o.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "spec", "config")
	b, _ := json.Marshal(c.Object)
	return fmt.Sprintf("%s; spec.config at %s, %d bytes", b, storedVersion(o), len(configOf(o)))
}
