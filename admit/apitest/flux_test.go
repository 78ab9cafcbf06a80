package apitest

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ignition-mcs/mcs/internal/kubetest"
)

// fluxManager is Flux's own apply and drift code (what kustomize-controller
// runs) as field manager field.
func fluxManager(t *testing.T, cp *kubetest.ControlPlane, field string) *ssa.ResourceManager {
	t.Helper()
	c, err := crclient.New(cp.Admin, crclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ssa.NewResourceManager(c, nil, ssa.Owner{Field: field, Group: "kustomize.toolkit.fluxcd.io"})
}

func copies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}

// TestFluxApplyAndDiff applies OpenShift's MachineConfigs at their specs
// with Flux's ResourceManager.ApplyAll, as one Kustomization and then as
// another (its own owner labels: a real apply), then diffs each as Flux's
// drift detection does: no conflict, no drift, each stored at its lowest
// spec and owned at the values applied. A changed manifest is reported as
// drift, applied, stored lowered, and is then in sync again. Flux applies
// and dry-runs with ForceOwnership, so it never met the conflict over the
// version itself; it owned the version at the lowered value instead, and a
// later apply without force by anyone else conflicted with it.
func TestFluxApplyAndDiff(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	t.Cleanup(func() { s.cp.DeleteAll(t, machineConfigs) })
	objs := manifests(t, "aws")
	opts := ssa.DefaultApplyOptions()
	for i, field := range []string{"kustomize-controller", "flux-other"} {
		m := fluxManager(t, s.cp, field)
		applied := copies(objs)
		m.SetOwnerLabels(applied, field, "flux-system")
		cs, err := m.ApplyAll(ctx, applied, opts)
		if err != nil {
			t.Fatalf("ApplyAll as %s: %v", field, err)
		}
		want := ssa.CreatedAction
		if i > 0 {
			want = ssa.ConfiguredAction // its owner labels
		}
		for _, e := range cs.Entries {
			if e.Action != want {
				t.Errorf("ApplyAll as %s: %s %s, want %s", field, e.Subject, e.Action, want)
			}
		}
		for _, o := range applied {
			entry, live, merged, err := m.Diff(ctx, o, ssa.DefaultDiffOptions())
			if err != nil {
				t.Fatalf("Diff as %s of %s: %v", field, o.GetName(), err)
			}
			if entry.Action != ssa.UnchangedAction {
				t.Errorf("Diff as %s: %s %s: drift between\n%s\nand\n%s", field, o.GetName(), entry.Action, brief(live), brief(merged))
			}
			stored := get(t, s.cp.Dynamic, o.GetName())
			if got, want := storedVersion(stored), lowered(t, o).Stored.String(); got != want {
				t.Errorf("%s stored at %s after ApplyAll as %s, want %s", o.GetName(), got, field, want)
			}
			checkOwnedAsApplied(t, stored, o)
		}
	}

	// And a plain server-side apply beside Flux (kubectl apply
	// --server-side: no force), which conflicted over the version.
	for _, o := range objs {
		if _, err := serverSideApply(ctx, s.cp.Dynamic, o, "kubectl", false); err != nil {
			t.Errorf("kubectl's apply of %s after Flux's: %v", o.GetName(), err)
		}
	}

	checkFluxChange(t, s, objs, opts)
}

// checkFluxChange changes a manifest as in Git (a user's key, the manifest
// still at 3.5.0): Flux reports it as drift, applies it, and it is stored
// lowered, in sync again.
func checkFluxChange(t *testing.T, s *webhookServer, objs []*unstructured.Unstructured, opts ssa.ApplyOptions) {
	t.Helper()
	ctx := context.Background()
	m := fluxManager(t, s.cp, "flux-other")
	var changed *unstructured.Unstructured
	for _, o := range objs {
		if o.GetName() == "99-worker-ssh" {
			changed = o.DeepCopy()
		}
	}
	m.SetOwnerLabels([]*unstructured.Unstructured{changed}, "flux-other", "flux-system")
	users := []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA changed"}}}
	if err := unstructured.SetNestedField(changed.Object, "3.5.0", "spec", "config", "ignition", "version"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(changed.Object, users, "spec", "config", "passwd", "users"); err != nil {
		t.Fatal(err)
	}
	entry, _, _, err := m.Diff(ctx, changed, ssa.DefaultDiffOptions())
	if err != nil || entry.Action != ssa.ConfiguredAction {
		t.Fatalf("Diff of a changed manifest: %v %v, want drift (%s)", entry, err, ssa.ConfiguredAction)
	}
	cs, err := m.ApplyAll(ctx, []*unstructured.Unstructured{changed}, opts)
	if err != nil || len(cs.Entries) != 1 || cs.Entries[0].Action != ssa.ConfiguredAction {
		t.Fatalf("ApplyAll of the change: %v %v", cs, err)
	}
	stored := get(t, s.cp.Dynamic, changed.GetName())
	if got, _, _ := unstructured.NestedSlice(stored.Object, "spec", "config", "passwd", "users"); !sameValue(got, users) {
		t.Errorf("stored users %v, want %v", got, users)
	}
	if v := storedVersion(stored); v != "3.0.0" {
		t.Errorf("the change stored at %s, want 3.0.0", v)
	}
	if entry, _, _, err := m.Diff(ctx, changed, ssa.DefaultDiffOptions()); err != nil || entry.Action != ssa.UnchangedAction {
		t.Errorf("Diff after the change was applied: %v %v, want %s", entry, err, ssa.UnchangedAction)
	}
	checkOwnedAsApplied(t, stored, changed)
}
