package stored

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ignition-mcs/mcs/internal/text"
)

// Recorder writes Kubernetes Events; client-go's record.EventRecorder is
// one.
type Recorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// openShiftManagers are the field managers of OpenShift's own writers of
// MachineConfigs (client-go names a manager after its binary).
var openShiftManagers = map[string]bool{"machine-config-controller": true, "machine-config-operator": true}

// writerField is where summarize keeps, beside the summary, who last set
// spec.config (its field manager): managedFields are dropped from the
// cache.
const writerField = "writer"

// configWriter is the field manager that set spec.config last, "" when
// none did (an object written before managed fields, or by an apply that
// left it out).
func configWriter(entries []metav1.ManagedFieldsEntry) string {
	var who string
	var when *metav1.Time
	for _, e := range entries {
		if e.FieldsV1 == nil || !setsConfig(e.FieldsV1.Raw) {
			continue
		}
		if who == "" || e.Time != nil && (when == nil || when.Before(e.Time)) {
			who, when = e.Manager, e.Time
		}
	}
	return who
}

// setsConfig reports whether a managedFields entry's fields hold
// spec.config.
func setsConfig(raw []byte) bool {
	var f struct {
		Spec map[string]json.RawMessage `json:"f:spec"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return false
	}
	_, ok := f.Spec["f:config"]
	return ok
}

// aboveMetric counts the writes the watch sees stored above the ceiling.
func aboveMetric(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcs_admit_above_ceiling_writes_total",
		Help: "MachineConfig writes stored needing a spec above the ceiling (no lower spec holds them), as the watch of stored MachineConfigs sees them, by writer per managedFields: openshift (the machine-config controller or operator), other.",
	}, []string{"actor"})
	return c, reg.Register(c)
}

// maxListed bounds the fields an Event names.
const maxListed = 5

// stored is called with each MachineConfig written while the watch runs
// (not those listed at its start: /status and the gauge count those): one
// that needs more than the ceiling is logged and counted, with an Event
// when OpenShift's own controllers wrote it (a person was warned, or
// refused, by the webhook). Only what the API server stored counts: a
// review's body is anyone's to send.
func (w *Watch) stored(u *unstructured.Unstructured) {
	ceiling, known := w.cfg.Ceiling()
	if !known || ceiling.IsZero() {
		return
	}
	s, _ := summaryOf(u)
	if s == nil {
		return
	}
	f, bad := s.verdict(ceiling)
	if !bad || f.Fixable || f.Lowest == "" {
		return // readable at the ceiling, fixable by lower-existing, or no spec: the report says
	}
	writer, _, _ := unstructured.NestedString(u.Object, "spec", summaryField, writerField)
	actor := "other"
	if openShiftManagers[writer] {
		actor = "openshift"
	}
	w.above.WithLabelValues(actor).Inc()
	fields := f.Forces
	if len(fields) > maxListed {
		fields = append(fields[:maxListed:maxListed], fmt.Sprintf("and %d more", len(f.Forces)-maxListed))
	}
	msg := fmt.Sprintf("MachineConfig %s needs Ignition spec %s, above the ceiling %s: the release a rollback returns to could not read it; fields: %s",
		text.ForLog(u.GetName()), f.Lowest, ceiling, strings.Join(fields, "; "))
	w.cfg.Log.Warn("MachineConfig stored above the ceiling", "name", text.ForLog(u.GetName()), "writer", text.ForLog(writer),
		"needs", f.Lowest, "ceiling", ceiling.String(), "fields", len(f.Forces))
	if actor == "openshift" && w.cfg.Recorder != nil {
		ref := &corev1.ObjectReference{APIVersion: machineConfigs.GroupVersion().String(), Kind: "MachineConfig", Name: u.GetName(), UID: u.GetUID()}
		w.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, "AboveRollbackSpec", "%s", msg)
	}
}

// written reports whether an update changed spec.config: a resync, or a
// write of labels alone, is not a write of the config.
func written(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	n, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return false
	}
	_, ko := summaryOf(o)
	_, kn := summaryOf(n)
	return ko != kn
}
