package cutover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
)

// Blocker is something apply needs that the cluster lacks, found before
// its first write.
type Blocker struct {
	What string // "namespace openshift-image-registry", "patch clusterversions.config.openshift.io/version"
	Err  error
	// Capability is the OpenShift capability, not enabled in the
	// ClusterVersion, that a missing namespace comes with ("ImageRegistry").
	Capability string
}

// namespaceCapabilities are the cluster capabilities the namespaces the
// manifests go to exist only with.
var namespaceCapabilities = map[string]string{"openshift-image-registry": "ImageRegistry"}

// CheckError lists every Blocker check found.
type CheckError struct{ Blockers []Blocker }

func (e *CheckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d blocker(s) found before any change", len(e.Blockers))
	for _, bl := range e.Blockers {
		fmt.Fprintf(&b, "; %s: %v", bl.What, bl.Err)
	}
	return b.String()
}

// access is one request apply or back makes, as RBAC sees it.
type access struct {
	verb, group, resource, sub, namespace, name string
}

// accesses are the requests apply and back make besides the manifests'
// own: the ClusterVersion, the operator's Deployment and its scale, the
// pods they wait on, the DaemonSet, and the Record.
var accesses = []access{
	{"get", "config.openshift.io", "clusterversions", "", "", "version"},
	{"patch", "config.openshift.io", "clusterversions", "", "", "version"},
	{"get", "apps", "deployments", "", Namespace, Operator},
	{"update", "apps", "deployments", "scale", Namespace, Operator},
	{"list", "", "pods", "", Namespace, ""},
	{"get", "apps", "daemonsets", "", Namespace, DaemonSet},
	{"patch", "apps", "daemonsets", "", Namespace, DaemonSet},
	{"get", "", "configmaps", "", Namespace, RecordName},
	{"create", "", "configmaps", "", Namespace, ""},
	{"update", "", "configmaps", "", Namespace, RecordName},
	{"delete", "", "configmaps", "", Namespace, RecordName},
}

// check finds, writing nothing, what would stop apply or back part-way:
// a namespace a manifest goes to missing or being deleted, a kind the
// API server does not serve (mcs's PrometheusRule aside: apply skips it),
// and each verb on each resource they use that the user may not (one
// SelfSubjectAccessReview each, which the API server does not store). It
// returns a *CheckError listing them all.
func (c *Cutover) check(ctx context.Context) error {
	var out []Blocker
	namespaces := map[string]bool{Namespace: true}
	want := append([]access(nil), accesses...)
	for _, o := range c.cfg.Manifests {
		if ns := o.GetNamespace(); ns != "" {
			namespaces[ns] = true
		}
		if o.GetKind() == "DaemonSet" {
			continue // OpenShift's, patched: see accesses
		}
		what := o.GetKind() + " " + o.GetName()
		res, err := c.mapping(o.GroupVersionKind())
		if meta.IsNoMatchError(err) && o.GetKind() == "PrometheusRule" {
			continue
		}
		if err != nil {
			out = append(out, Blocker{What: what, Err: err})
			continue
		}
		for _, v := range []string{"create", "patch", "delete"} {
			name := o.GetName()
			if v == "create" {
				name = ""
			}
			want = append(want, access{v, res.Group, res.Resource, "", o.GetNamespace(), name})
		}
	}
	for _, ns := range sortedKeys(namespaces) {
		n, err := c.cfg.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case err != nil:
			out = append(out, Blocker{What: "namespace " + ns, Err: err, Capability: capabilityOff(ctx, c.cfg.Dynamic, ns)})
		case n.Status.Phase == corev1.NamespaceTerminating:
			out = append(out, Blocker{What: "namespace " + ns, Err: errors.New("being deleted")})
		}
	}
	for _, a := range want {
		if err := allowed(ctx, c.cfg.Kube, a); err != nil {
			out = append(out, Blocker{What: a.String(), Err: err})
		}
	}
	if len(out) > 0 {
		return &CheckError{Blockers: out}
	}
	return nil
}

func (a access) String() string {
	s := a.verb + " " + a.resource
	if a.sub != "" {
		s += "/" + a.sub
	}
	if a.group != "" {
		s += "." + a.group
	}
	if a.name != "" {
		s += "/" + a.name
	}
	if a.namespace != "" {
		s += " in " + a.namespace
	}
	return s
}

// allowed asks the API server whether the user may make a.
func allowed(ctx context.Context, k kubernetes.Interface, a access) error {
	r, err := k.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Namespace: a.namespace, Name: a.name}}},
		metav1.CreateOptions{})
	switch {
	case err != nil:
		return fmt.Errorf("asking whether allowed: %w", err)
	case !r.Status.Allowed:
		why := r.Status.Reason
		if why == "" {
			why = "no role grants it"
		}
		return fmt.Errorf("forbidden: %s", why)
	}
	return nil
}

// mapping is a kind's resource, through the API server's discovery (read
// once).
func (c *Cutover) mapping(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	if c.mapper == nil {
		groups, err := restmapper.GetAPIGroupResources(c.cfg.Kube.Discovery())
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("discovering the API server's kinds: %w", err)
		}
		c.mapper = restmapper.NewDiscoveryRESTMapper(groups)
	}
	rm, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return rm.Resource, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// capabilityOff is the capability namespace ns comes with when the
// ClusterVersion's status says it is not enabled, else "".
func capabilityOff(ctx context.Context, dyn dynamic.Interface, ns string) string {
	capability := namespaceCapabilities[ns]
	if capability == "" {
		return ""
	}
	cv, err := dyn.Resource(clusterVersions).Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	enabled, found, _ := unstructured.NestedStringSlice(cv.Object, "status", "capabilities", "enabledCapabilities")
	if !found || slices.Contains(enabled, capability) {
		return ""
	}
	return capability
}
