// Package cutover moves an OpenShift cluster's machine-config-server DaemonSet to mcs and back, keeping what it did not add and never leaving nodes without a server.
package cutover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ignition-mcs/mcs/deploy"
)

// What the cutover touches: OpenShift's names.
const (
	Namespace    = "openshift-machine-config-operator"
	Operator     = "machine-config-operator"
	DaemonSet    = "machine-config-server"
	fieldManager = "mcs-cutover"
	// command is the mcs container's command: a DaemonSet whose first
	// container runs it is mcs's, any other the operator's.
	command = "/usr/bin/mcs"

	// annotationReplicas on mcs's DaemonSet keeps the operator's replica
	// count from before, for going back.
	annotationReplicas = "mcs.openshift.io/operator-replicas"
	// annotationOverride says whether apply added the ClusterVersion
	// override ("true") or found it there ("false"): going back removes
	// only one it added.
	annotationOverride = "mcs.openshift.io/override-added"
)

// clusterVersions is config.openshift.io's ClusterVersion resource.
var clusterVersions = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}

// Config is what a cutover runs with.
type Config struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Manifests are deploy/openshift's objects (nil: those built in); the
	// DaemonSet among them is given the running one's arguments and Image.
	Manifests []*unstructured.Unstructured
	Image     string // the mcs image; "" keeps the manifest's
	// Interval is how often a wait looks again; Timeout bounds each wait.
	Interval, Timeout time.Duration
	// Preflight, when set, runs once mcs's ServiceAccount and RBAC are in
	// place and before anything a node sees changes (mcs preflight as
	// that ServiceAccount); an error stops apply there.
	Preflight func(context.Context) error
	Logger    *slog.Logger
}

// State is which server the cluster runs.
type State string

// The states Plan finds.
const (
	StateOpenShift State = "openshift" // the operator's server, the operator running
	StateMCS       State = "mcs"       // mcs's DaemonSet, the operator stopped
	StateNoServer  State = "none"      // no machine-config-server DaemonSet
)

// Plan is what apply or back would do, read from the cluster.
type Plan struct {
	State State
	// Args are the running server's arguments after its command's
	// subcommand: OpenShift's DaemonSet's, which mcs start accepts.
	Args []string
	// OperatorReplicas is the operator Deployment's replica count now.
	OperatorReplicas int32
	// Override is the ClusterVersion's entry for the operator's
	// Deployment (nil when none), at OverrideIndex in spec.overrides of
	// OtherOverrides entries besides it.
	Override       map[string]any
	OverrideIndex  int
	OtherOverrides int
	// Patch is the JSON patch apply sends the ClusterVersion (nil when the
	// override is set already).
	Patch []byte
	// DaemonSet is what apply applies server-side (nil in StateMCS
	// without a Record).
	DaemonSet *unstructured.Unstructured
	// Image is the image the DaemonSet asks for.
	Image string
	// Pods are the DaemonSet's pods as they run: what serves, whatever
	// the DaemonSet asks for; Desired, Updated and Available are its
	// rollout's counts.
	Pods                        []Pod
	Desired, Updated, Available int32
	// Generation is the DaemonSet's, ObservedGeneration the one its
	// controller last acted on (and its counts are of).
	Generation, ObservedGeneration int64
	// Record is the cutover's Record when one is kept: apply was run and
	// back has not undone it.
	Record *Record
}

// Pod is one pod of the DaemonSet as it runs.
type Pod struct {
	Name, Node string
	Server     State  // whose server its container runs
	Image      string // the image its container runs
	Ready      bool
	// Waiting is why its container is not running ("ImagePullBackOff:
	// ..."), or "".
	Waiting string
}

// Cutover plans and runs the move.
type Cutover struct {
	cfg  Config
	log  *slog.Logger
	ov   overrides
	book *ledger
	// mapper maps kinds to resources, from discovery read once.
	mapper meta.RESTMapper
}

// New checks cfg.
func New(cfg Config) (*Cutover, error) {
	if cfg.Kube == nil || cfg.Dynamic == nil {
		return nil, errors.New("cutover: no clients")
	}
	if cfg.Manifests == nil {
		files, err := deploy.OpenShift()
		if err != nil {
			return nil, err
		}
		if cfg.Manifests, err = decode(files); err != nil {
			return nil, err
		}
	}
	if manifest(cfg.Manifests, "DaemonSet") == nil {
		return nil, errors.New("cutover: the manifests hold no DaemonSet")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Cutover{cfg: cfg, log: log, ov: overrides{cfg.Dynamic}, book: &ledger{cms: cfg.Kube.CoreV1().ConfigMaps(Namespace)}}, nil
}

// Plan reads the cluster: which server the DaemonSet asks for and which
// its pods run, with what arguments, the operator's replicas, the
// ClusterVersion's overrides and the cutover's Record.
func (c *Cutover) Plan(ctx context.Context) (*Plan, error) {
	p := &Plan{State: StateNoServer}
	dep, err := c.cfg.Kube.AppsV1().Deployments(Namespace).Get(ctx, Operator, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Deployment %s/%s: %w", Namespace, Operator, err)
	}
	p.OperatorReplicas = ptrValue(dep.Spec.Replicas, 1)
	ds, err := c.cfg.Kube.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading DaemonSet %s/%s: %w", Namespace, DaemonSet, err)
	default:
		p.State, p.Args = serverOf(&ds.Spec.Template.Spec)
		p.Image = imageOf(&ds.Spec.Template.Spec)
		p.Desired, p.Updated, p.Available = ds.Status.DesiredNumberScheduled, ds.Status.UpdatedNumberScheduled, ds.Status.NumberAvailable
		p.Generation, p.ObservedGeneration = ds.Generation, ds.Status.ObservedGeneration
		if p.Pods, err = c.pods(ctx, ds); err != nil {
			return nil, err
		}
	}
	if err := c.ov.plan(ctx, p); err != nil {
		return nil, err
	}
	if p.Record, err = c.book.load(ctx); err != nil {
		return nil, err
	}
	r := p.Record
	switch {
	case r == nil && p.State != StateOpenShift:
		return p, nil
	case r == nil && (len(p.Args) == 0 || p.Args[0] != "start"):
		return nil, fmt.Errorf("the running DaemonSet's arguments %q are not machine-config-server start's: nothing to copy", p.Args)
	case r == nil:
		r = newRecord(p, c.cfg.Image)
	}
	if p.DaemonSet, err = c.daemonSet(r); err != nil {
		return nil, err
	}
	return p, nil
}

// pods are ds's pods as they run.
func (c *Cutover) pods(ctx context.Context, ds *appsv1.DaemonSet) ([]Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("DaemonSet %s/%s: %w", Namespace, DaemonSet, err)
	}
	list, err := c.cfg.Kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of DaemonSet %s/%s: %w", Namespace, DaemonSet, err)
	}
	var out []Pod
	for _, pod := range list.Items {
		p := Pod{Name: pod.Name, Node: pod.Spec.NodeName, Image: imageOf(&pod.Spec)}
		p.Server, _ = serverOf(&pod.Spec)
		for _, cs := range pod.Status.ContainerStatuses {
			if len(pod.Spec.Containers) > 0 && cs.Name == pod.Spec.Containers[0].Name {
				p.Ready = cs.Ready
				if w := cs.State.Waiting; w != nil {
					p.Waiting = w.Reason + ": " + w.Message
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// serverOf says whose server a pod spec runs and its arguments.
func serverOf(spec *corev1.PodSpec) (State, []string) {
	cs := spec.Containers
	if len(cs) == 0 {
		return StateOpenShift, nil
	}
	state := StateOpenShift
	if slices.Contains(cs[0].Command, command) {
		state = StateMCS
	}
	return state, slices.Clone(cs[0].Args)
}

// imageOf is a pod spec's server's image.
func imageOf(spec *corev1.PodSpec) string {
	if len(spec.Containers) == 0 {
		return ""
	}
	return spec.Containers[0].Image
}

// newRecord is what apply keeps of plan p before its first change.
func newRecord(p *Plan, image string) *Record {
	return &Record{OperatorReplicas: p.OperatorReplicas, OverrideAdded: p.Override == nil || p.Override["unmanaged"] != true,
		Args: p.Args, OpenShiftImage: p.Image, Image: image}
}

// daemonSet is the manifest's DaemonSet with OpenShift's server's
// arguments, the image, and what going back needs to know.
func (c *Cutover) daemonSet(r *Record) (*unstructured.Unstructured, error) {
	ds := manifest(c.cfg.Manifests, "DaemonSet").DeepCopy()
	containers, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return nil, errors.New("cutover: the manifest's DaemonSet has no container")
	}
	first := containers[0].(map[string]any)
	args := make([]any, len(r.Args))
	for i, a := range r.Args {
		args[i] = a
	}
	first["args"] = args
	if r.Image != "" {
		first["image"] = r.Image
	}
	if err := unstructured.SetNestedSlice(ds.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return nil, err
	}
	ann := ds.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[annotationReplicas] = fmt.Sprint(r.OperatorReplicas)
	ann[annotationOverride] = fmt.Sprint(r.OverrideAdded)
	ds.SetAnnotations(ann)
	return ds, nil
}

// manifest is the first of objs of kind, or nil.
func manifest(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func ptrValue(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// resource maps an object to its resource, through the API server's
// discovery.
func (c *Cutover) resource(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvr, err := c.mapping(o.GroupVersionKind())
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
	}
	r := c.cfg.Dynamic.Resource(gvr)
	if ns := o.GetNamespace(); ns != "" {
		return r.Namespace(ns), nil
	}
	return r, nil
}
