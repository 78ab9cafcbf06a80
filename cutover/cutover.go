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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ignition-mcs/mcs/deploy"
	"k8s.io/client-go/restmapper"
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
	Logger            *slog.Logger
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
	// DaemonSet is what apply applies server-side (nil in StateMCS).
	DaemonSet *unstructured.Unstructured
}

// Cutover plans and runs the move.
type Cutover struct {
	cfg Config
	log *slog.Logger
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
	return &Cutover{cfg: cfg, log: log}, nil
}

// Plan reads the cluster: which server runs, with what arguments, the
// operator's replicas and the ClusterVersion's overrides.
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
		p.State, p.Args = serverOf(ds)
	}
	if err := c.planOverride(ctx, p); err != nil {
		return nil, err
	}
	if p.State == StateOpenShift {
		if p.DaemonSet, err = c.daemonSet(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// serverOf says whose server ds runs and its arguments.
func serverOf(ds *appsv1.DaemonSet) (State, []string) {
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) == 0 {
		return StateOpenShift, nil
	}
	state := StateOpenShift
	if slices.Contains(cs[0].Command, command) {
		state = StateMCS
	}
	return state, slices.Clone(cs[0].Args)
}

// daemonSet is the manifest's DaemonSet with the running server's
// arguments, the image, and what going back needs to know.
func (c *Cutover) daemonSet(p *Plan) (*unstructured.Unstructured, error) {
	ds := manifest(c.cfg.Manifests, "DaemonSet").DeepCopy()
	containers, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return nil, errors.New("cutover: the manifest's DaemonSet has no container")
	}
	first := containers[0].(map[string]any)
	if len(p.Args) == 0 || p.Args[0] != "start" {
		return nil, fmt.Errorf("the running DaemonSet's arguments %q are not machine-config-server start's: nothing to copy", p.Args)
	}
	args := make([]any, len(p.Args))
	for i, a := range p.Args {
		args[i] = a
	}
	first["args"] = args
	if c.cfg.Image != "" {
		first["image"] = c.cfg.Image
	}
	if err := unstructured.SetNestedSlice(ds.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return nil, err
	}
	ann := ds.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[annotationReplicas] = fmt.Sprint(max(p.OperatorReplicas, 1))
	ann[annotationOverride] = fmt.Sprint(p.Override == nil || p.Override["unmanaged"] != true)
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
	groups, err := restmapper.GetAPIGroupResources(c.cfg.Kube.Discovery())
	if err != nil {
		return nil, err
	}
	gvk := o.GroupVersionKind()
	m, err := restmapper.NewDiscoveryRESTMapper(groups).RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
	}
	r := c.cfg.Dynamic.Resource(m.Resource)
	if ns := o.GetNamespace(); ns != "" {
		return r.Namespace(ns), nil
	}
	return r, nil
}
