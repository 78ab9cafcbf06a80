package stored

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
)

// fieldManager names lower-existing's writes in managedFields.
const fieldManager = "mcs-admit-lower-existing"

// Restore is what LowerExisting does: which MachineConfigs, against which
// ceiling, and whether to write.
type Restore struct {
	Client dynamic.Interface
	// Ceiling is the newest spec the rollback release parses (zero: none
	// known; then every config stored above its lowest spec is stored
	// again).
	Ceiling convert.Version
	// Confirm writes; without it nothing is written.
	Confirm bool
	// PageSize is how many MachineConfigs a list page holds (0: 50):
	// rendered configs are each the size of a pool.
	PageSize int64
}

// Outcome is one MachineConfig the rollback release cannot parse and what
// LowerExisting did with it.
type Outcome struct {
	Finding
	// To is the spec it is (Written) or would be stored at; "" when the
	// conversion cannot bring it to the ceiling.
	To string
	// Written says it was stored again (Confirm); Gone that it changed or
	// went away meanwhile, so that nothing was to be written.
	Written, Gone bool
	// Err is why the write failed.
	Err error
}

// LowerExisting lists every MachineConfig, reports each one the rollback
// release cannot parse to report, and with Confirm stores again those the
// webhook's conversion (admit.Lower) brings to the ceiling: an Update of
// spec.config alone, carrying the resourceVersion it was read at, read
// again and redone on a conflict. Names, labels, annotations and owner
// references are left as they are, so pools and the nodes that name a
// rendered config see the same object, equivalent content at a lower
// spec. It returns the first error listing, not a write's (those are in
// the outcomes).
func LowerExisting(ctx context.Context, r Restore, report func(Outcome)) error {
	pools, err := r.Client.Resource(machineConfigPools).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	known := poolsFrom(listItems(pools))
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return r.Client.Resource(machineConfigs).List(ctx, o)
	})
	p.PageSize = r.PageSize
	if p.PageSize == 0 {
		p.PageSize = 50
	}
	err = p.EachListItemWithAlloc(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		mc, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("listing MachineConfigs: a %T", obj)
		}
		o, bad := r.check(mc)
		if !bad {
			return nil
		}
		o.Pools = poolsOf(mc, known)
		if r.Confirm && o.To != "" {
			o.Written, o.Gone, o.Err = r.write(ctx, mc.GetName())
		}
		report(o)
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing MachineConfigs: %w", err)
	}
	return nil
}

func listItems(l *unstructured.UnstructuredList) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// check is the watch's verdict on mc, and the spec it would be stored at.
func (r Restore) check(mc *unstructured.Unstructured) (Outcome, bool) {
	raw := configOf(mc)
	f, bad := summarize(raw).verdict(r.Ceiling)
	f.Name = mc.GetName()
	o := Outcome{Finding: f}
	if bad && f.Fixable && f.Lowest != f.Stored {
		o.To = f.Lowest
	}
	return o, bad
}

// write stores mc's config again at the spec check found, read fresh: it
// returns gone when it no longer needs it (changed meanwhile, by a writer
// or the webhook) or no longer exists.
func (r Restore) write(ctx context.Context, name string) (written, gone bool, err error) {
	res := r.Client.Resource(machineConfigs)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		written, gone = false, false
		mc, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		o, bad := r.check(mc)
		if !bad || o.To == "" {
			gone = true
			return nil
		}
		low, err := admit.Lower(configOf(mc), r.Ceiling)
		if err != nil || !low.Changed() {
			gone = true
			return nil
		}
		var config any
		dec := json.NewDecoder(bytes.NewReader(low.Config))
		dec.UseNumber() // numbers as written, not through float64
		if err := dec.Decode(&config); err != nil {
			return fmt.Errorf("the converted config of %s: %w", name, err)
		}
		if err := unstructured.SetNestedField(mc.Object, config, "spec", "config"); err != nil {
			return err
		}
		// Update, not apply: the whole object as read, resourceVersion
		// included, so a concurrent write is a conflict, never lost.
		_, err = res.Update(ctx, mc, metav1.UpdateOptions{FieldManager: fieldManager})
		written = err == nil
		return err
	})
	if apierrors.IsNotFound(err) {
		return false, true, nil
	}
	return written, gone, err
}

// configOf is mc's spec.config as JSON, nil when it has none.
func configOf(mc *unstructured.Unstructured) []byte {
	raw, ok, _ := unstructured.NestedFieldNoCopy(mc.Object, "spec", "config")
	if !ok || raw == nil {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	return b
}
