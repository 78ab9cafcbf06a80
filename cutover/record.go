package cutover

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// RecordName is the ConfigMap in Namespace that holds a cutover's Record.
const RecordName = "mcs-cutover"

const recordKey = "record.json"

// Step is one part of apply, in the order apply runs them.
type Step string

// The steps of apply. Those that change the cluster are begun in the
// Record before their first write; preflight and the rollout only wait or
// read.
const (
	StepCheck     Step = "check"     // reads: namespaces, kinds, rights
	StepRecord    Step = "record"    // ConfigMap mcs-cutover written
	StepRBAC      Step = "rbac"      // mcs's ServiceAccount and RBAC applied
	StepPreflight Step = "preflight" // mcs preflight as that ServiceAccount
	StepOverride  Step = "override"  // the ClusterVersion override set
	StepScale     Step = "scale"     // the operator scaled to 0, its pods gone
	StepDaemonSet Step = "daemonset" // the DaemonSet applied with mcs's image
	StepRollout   Step = "rollout"   // the DaemonSet rolled out on mcs
)

// Record is what apply found before its first change and which changes it
// has begun: what back restores, and where apply run again resumes. It is
// kept from before apply's first change until back has undone them all.
type Record struct {
	// OperatorReplicas and OverrideAdded are the operator's replicas
	// before, and whether apply added (rather than found) the override.
	OperatorReplicas int32 `json:"operatorReplicas"`
	OverrideAdded    bool  `json:"overrideAdded"`
	// Args and OpenShiftImage are OpenShift's server's.
	Args           []string `json:"args"`
	OpenShiftImage string   `json:"openShiftImage"`
	// Image is the mcs image asked for last.
	Image string `json:"image"`
	// Begun are the changing steps begun, in order; Done says the rollout
	// completed.
	Begun []Step `json:"begun"`
	Done  bool   `json:"done"`
}

// has says whether step was begun.
func (r *Record) has(step Step) bool { return r != nil && slices.Contains(r.Begun, step) }

// ledger reads and writes the Record.
type ledger struct {
	cms corev1client.ConfigMapInterface
	rv  string // the resourceVersion last read or written
}

// load is the Record, or nil when none is kept.
func (l *ledger) load(ctx context.Context) (*Record, error) {
	cm, err := l.cms.Get(ctx, RecordName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", Namespace, RecordName, err)
	}
	l.rv = cm.ResourceVersion
	var r Record
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), &r); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", Namespace, RecordName, recordKey, err)
	}
	return &r, nil
}

// save writes r: created when none was read, else updated over the one
// last read or written, so two applies at once cannot both proceed.
func (l *ledger) save(ctx context.Context, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RecordName, Namespace: Namespace, ResourceVersion: l.rv,
		Labels: map[string]string{"app.kubernetes.io/name": "mcs"}}, Data: map[string]string{recordKey: string(b)}}
	if l.rv == "" {
		cm, err = l.cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
	} else {
		cm, err = l.cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: fieldManager})
	}
	if err != nil {
		return fmt.Errorf("writing ConfigMap %s/%s: %w", Namespace, RecordName, err)
	}
	l.rv = cm.ResourceVersion
	return nil
}

// begin records step as begun, before its first write.
func (l *ledger) begin(ctx context.Context, r *Record, step Step) error {
	if r.has(step) {
		return nil
	}
	r.Begun = append(r.Begun, step)
	return l.save(ctx, r)
}

// remove deletes the Record, once everything it names is undone.
func (l *ledger) remove(ctx context.Context) error {
	err := l.cms.Delete(ctx, RecordName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ConfigMap %s/%s: %w", Namespace, RecordName, err)
	}
	l.rv = ""
	return nil
}
