package stored

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/source/kube"
)

// cexConfig needs spec 3.5.0 (LUKS on IBM's CEX), above the ceiling.
const cexConfig = `{ignition: {version: 3.5.0}, storage: {luks: [{name: root, device: /dev/sda, cex: {enabled: true}}]}}`

// The watch counts what was stored above the ceiling, by who wrote
// spec.config per managedFields, and records an Event for each that
// OpenShift's own controllers wrote: not for what it lists at its start,
// not for a config below the ceiling or fixable, not again for a write of
// labels alone.
func TestWatchAboveCeiling(t *testing.T) {
	cp := shared.Need(t)
	t.Cleanup(func() { cp.DeleteAll(t, kube.MachineConfigs) })
	ctx := context.Background()
	create := func(name, manager, config string) {
		t.Helper()
		u := kubetest.Object(t, fmt.Sprintf("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata: {name: %s}\nspec: {config: %s}\n", name, config))
		if _, err := cp.Dynamic.Resource(kube.MachineConfigs).Create(ctx, u, metav1.CreateOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	create("00-before", "machine-config-controller", cexConfig)
	rec := record.NewFakeRecorder(100)
	reg := prometheus.NewPedanticRegistry()
	w, err := New(Config{Client: cp.Dynamic, Registry: reg, Log: kubetest.Logger(t), Recorder: rec,
		Ceiling: func() (convert.Version, bool) { return rollback, true }})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Run(t, w)
	kubetest.Eventually(t, time.Minute, "listed", func() error {
		if w.latest() == nil {
			return fmt.Errorf("not listed")
		}
		return nil
	})
	create("99-cex-controller", "machine-config-controller", cexConfig)
	create("99-cex-alice", "kubectl-create", cexConfig)
	create("99-kargs-controller", "machine-config-controller", `{ignition: {version: 3.5.0}, kernelArguments: {shouldExist: [nosmt]}}`)
	mc, err := cp.Dynamic.Resource(kube.MachineConfigs).Get(ctx, "99-cex-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc.SetLabels(map[string]string{"a": "b"})
	if _, err := cp.Dynamic.Resource(kube.MachineConfigs).Update(ctx, mc, metav1.UpdateOptions{FieldManager: "machine-config-controller"}); err != nil {
		t.Fatal(err)
	}
	// A last write, seen after the others (one handler sees them in
	// order): once it is counted, every one before it was handled.
	create("zz-last", "machine-config-operator", cexConfig)
	// The counter moves before the Event is recorded, so wait for both:
	// zz-last's Event is the last thing the handler does for the writes.
	var events []string
	kubetest.Eventually(t, time.Minute, "the writes counted and recorded", func() error {
		for len(rec.Events) > 0 {
			events = append(events, <-rec.Events)
		}
		o, other := testutil.ToFloat64(w.above.WithLabelValues("openshift")), testutil.ToFloat64(w.above.WithLabelValues("other"))
		if o != 2 || other != 1 {
			return fmt.Errorf("openshift %v, other %v; want 2 and 1", o, other)
		}
		if len(events) == 0 || !strings.Contains(events[len(events)-1], "MachineConfig zz-last ") {
			return fmt.Errorf("events %q: zz-last's not yet recorded", events)
		}
		return nil
	})
	if len(events) != 2 || !strings.HasPrefix(events[0], "Warning AboveRollbackSpec MachineConfig 99-cex-controller needs Ignition spec 3.5.0, above the ceiling 3.4.0") ||
		!strings.Contains(events[0], "$.storage.luks.0.cex") || !strings.Contains(events[1], "MachineConfig zz-last ") {
		t.Errorf("events %q, want one for 99-cex-controller, one for zz-last", events)
	}
}
