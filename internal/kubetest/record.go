package kubetest

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// Recorder records the API requests made through the configs it wraps,
// each as a Call: what RBAC checks of it.
type Recorder struct {
	mu    sync.Mutex
	calls map[Call]bool
}

// Call is one request as RBAC sees it: verb, API group, resource (with
// its subresource, "pods/log"), namespace ("" cluster-wide).
type Call struct{ Verb, Group, Resource, Namespace string }

func (c Call) String() string {
	s := c.Verb + " " + c.Resource
	if c.Group != "" {
		s += "." + c.Group
	}
	if c.Namespace != "" {
		s += " in " + c.Namespace
	}
	return s
}

// Wrap returns a copy of c whose requests r records.
func (r *Recorder) Wrap(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if call, ok := callOf(req); ok {
				r.mu.Lock()
				if r.calls == nil {
					r.calls = map[Call]bool{}
				}
				r.calls[call] = true
				r.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return c
}

// Calls are the calls recorded, sorted.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Call, 0, len(r.calls))
	for c := range r.calls {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Call) int { return strings.Compare(a.String(), b.String()) })
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// callOf reads a resource request's path (/api/v1/..., /apis/G/V/...);
// discovery and other non-resource paths are not calls.
func callOf(req *http.Request) (Call, bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var c Call
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		c.Group, parts = parts[1], parts[3:]
	default:
		return c, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		c.Namespace, parts = parts[1], parts[2:]
	}
	c.Resource = parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		c.Resource += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet:
		c.Verb = "list"
		if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
			c.Verb = "watch"
		} else if named {
			c.Verb = "get"
		}
	case http.MethodPost:
		c.Verb = "create"
	case http.MethodPut:
		c.Verb = "update"
	case http.MethodPatch:
		c.Verb = "patch"
	case http.MethodDelete:
		c.Verb = "delete"
		if !named {
			c.Verb = "deletecollection"
		}
	default:
		return c, false
	}
	return c, true
}

// Granted is every Call the roles in objs allow the ServiceAccount
// namespace/name, through the bindings in objs (resourceNames are not
// modelled: a rule naming objects fails t).
func Granted(t testing.TB, objs []*unstructured.Unstructured, namespace, name string) []Call {
	t.Helper()
	roles := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == "Role" || o.GetKind() == "ClusterRole" {
			roles[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	set := map[Call]bool{}
	for _, b := range objs {
		if (b.GetKind() != "RoleBinding" && b.GetKind() != "ClusterRoleBinding") || !bindsTo(b, namespace, name) {
			continue
		}
		kind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
		ref, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		ns := b.GetNamespace()
		key := kind + "//" + ref
		if kind == "Role" {
			key = kind + "/" + ns + "/" + ref
		}
		for _, r := range Rules(t, roles[key]) {
			if len(r.Names) > 0 {
				t.Errorf("%s: a rule names objects, which Granted does not model", ref)
			}
			for _, g := range r.Groups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						set[Call{v, g, res, ns}] = true
					}
				}
			}
		}
	}
	out := make([]Call, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Call) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func bindsTo(b *unstructured.Unstructured, namespace, name string) bool {
	subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
	for _, s := range subjects {
		m, _ := s.(map[string]any)
		if m["kind"] == "ServiceAccount" && m["name"] == name && m["namespace"] == namespace {
			return true
		}
	}
	return false
}

// ExactlyGranted fails t for each call not granted and each grant never
// called: the roles allow what the code does and nothing more. A grant
// cluster-wide (namespace "") covers a call in any namespace.
func ExactlyGranted(t testing.TB, granted, calls []Call) {
	t.Helper()
	covers := func(g, c Call) bool {
		return g.Verb == c.Verb && g.Group == c.Group && g.Resource == c.Resource && (g.Namespace == "" || g.Namespace == c.Namespace)
	}
	for _, c := range calls {
		if !slices.ContainsFunc(granted, func(g Call) bool { return covers(g, c) }) {
			t.Errorf("called and not granted: %s", c)
		}
	}
	for _, g := range granted {
		if !slices.ContainsFunc(calls, func(c Call) bool { return covers(g, c) }) {
			t.Errorf("granted and never called: %s", g)
		}
	}
}
