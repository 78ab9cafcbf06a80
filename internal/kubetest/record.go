package kubetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// Recorder records the API requests made through the configs it wraps,
// each as a Call: what RBAC checks of it.
type Recorder struct {
	// Intercept, when set, sees each request first: true means it has
	// answered it (a fault injected: see Refuse), and the API server never
	// sees it.
	Intercept func(w http.ResponseWriter, req *http.Request) bool

	mu     sync.Mutex
	calls  map[Call]bool
	writes []string
}

// Call is one request as RBAC sees it: verb, API group, resource (with
// its subresource, "pods/log"), namespace ("" cluster-wide) and the name
// of the object ("" for a list, a watch or a create; in a grant, any).
type Call struct{ Verb, Group, Resource, Namespace, Name string }

func (c Call) String() string {
	s := c.Verb + " " + c.Resource
	if c.Group != "" {
		s += "." + c.Group
	}
	if c.Name != "" {
		s += "/" + c.Name
	}
	if c.Namespace != "" {
		s += " in " + c.Namespace
	}
	return s
}

// Proxy serves, on loopback over plain HTTP until t ends, the API server
// of upstream with upstream's credentials, recording every request; it
// returns a config for it with no credentials of its own, which a
// kubeconfig file can hold (cutover's writeKubeconfig, say), so code run
// as a command is recorded as it calls.
func (r *Recorder) Proxy(t testing.TB, upstream *rest.Config) *rest.Config {
	t.Helper()
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = rt
	proxy.FlushInterval = -1 // watches stream
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls := callsOf(req)
		r.mu.Lock()
		if r.calls == nil {
			r.calls = map[Call]bool{}
		}
		for _, c := range calls {
			r.calls[c] = true
		}
		if req.Method != http.MethodGet {
			r.writes = append(r.writes, req.Method+" "+req.URL.RequestURI())
		}
		intercept := r.Intercept
		r.mu.Unlock()
		if intercept != nil && intercept(w, req) {
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// Writes are the requests other than GET sent through the proxy, in
// order, each as its method and URI ("POST /api/v1/namespaces/mcs/...?dryRun=All").
func (r *Recorder) Writes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.writes)
}

// Refuse answers a request as the API server refuses one: a Status of
// code with reason and message, which client-go reads as an APIStatus
// error (apierrors.IsConflict, IsNotFound ...).
func Refuse(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message})
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

// callsOf are the calls a request is: none for discovery and other
// non-resource paths; a streaming list (a watch with sendInitialEvents,
// which client-go's informers send, falling back to a list where the API
// server refuses it) is both a list and a watch.
func callsOf(req *http.Request) []Call {
	c, ok := callOf(req)
	if !ok {
		return nil
	}
	if c.Verb == "watch" && req.URL.Query().Get("sendInitialEvents") == "true" {
		l := c
		l.Verb = "list"
		return []Call{c, l}
	}
	return []Call{c}
}

// callOf reads a resource request's path (/api/v1/..., /apis/G/V/...).
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
	if named {
		c.Name = parts[1]
	}
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
// namespace/name, through the bindings in objs, one per object a rule
// names (resourceNames).
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
			names := r.Names
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.Groups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						for _, n := range names {
							set[Call{v, g, res, ns, n}] = true
						}
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
// cluster-wide (namespace "") covers a call in any namespace, one of any
// name a call of any.
func ExactlyGranted(t testing.TB, granted, calls []Call) {
	t.Helper()
	covers := func(g, c Call) bool {
		return g.Verb == c.Verb && g.Group == c.Group && g.Resource == c.Resource &&
			(g.Namespace == "" || g.Namespace == c.Namespace) && (g.Name == "" || g.Name == c.Name)
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
