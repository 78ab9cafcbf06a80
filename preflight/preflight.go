// Package preflight reads a cluster as mcs start would, changing nothing, and reports what it needs and would serve, and what blocks a cutover.
package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// need is one permission mcs start needs (deploy/openshift/rbac.yaml).
type need struct {
	verbs     []string
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

var readVerbs = []string{"get", "list", "watch"}

// needs are what mcs start does with the API, one line of the report each.
var needs = []need{
	{readVerbs, kube.MachineConfigs, "", ""},
	{readVerbs, kube.MachineConfigPools, "", ""},
	{readVerbs, kube.ControllerConfigs, "", ""},
	{readVerbs, kube.MachineOSConfigs, "", ""},
	{readVerbs, kube.MachineOSBuilds, "", ""},
	{readVerbs, kube.MachineConfigurations, "", "cluster"},
	{[]string{"get"}, schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}, "", "version"},
	{readVerbs, kube.ConfigMaps, kube.MCONamespace, kube.KubeconfigDataName},
	{readVerbs, kube.Routes, "openshift-image-registry", ""},
	{[]string{"create", "patch"}, kube.Events, "default", ""},
}

// Grants are the permissions mcs start needs, one "verb group resource
// namespace name" each: what deploy/openshift/rbac.yaml must grant.
func Grants() []string {
	var out []string
	for _, n := range needs {
		for _, v := range n.verbs {
			out = append(out, strings.Join([]string{v, n.gvr.Group, n.gvr.Resource, n.namespace, n.name}, " "))
		}
	}
	return out
}

func (n need) String() string {
	s := strings.Join(n.verbs, ",") + " " + n.gvr.Resource
	if n.gvr.Group != "" {
		s += "." + n.gvr.Group
	}
	if n.name != "" {
		s += "/" + n.name
	}
	if n.namespace != "" {
		s += " in " + n.namespace
	}
	return s
}

// ErrBlocked is a preflight that found what would stop the cutover.
var ErrBlocked = errors.New("blockers found")

// Config is what Run checks with.
type Config struct {
	REST *rest.Config
	Kube kubernetes.Interface
	// User is the ServiceAccount whose permissions are checked
	// ("system:serviceaccount:NS:NAME"), or "" for the REST config's own
	// identity.
	User string
	// SyncWait bounds the wait for the cluster's objects.
	SyncWait time.Duration
}

// Run writes the report to out, pool by pool: what OpenShift's server
// serves beside what mcs would, image-mode pools, and the objects and
// permissions missing; ErrBlocked when a blocker is found.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	p := &preflight{out: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0), kube: cfg.Kube, user: cfg.User}
	fmt.Fprintf(out, "mcs preflight: %s\n", cfg.REST.Host)
	// One cause, said once: an API server that cannot be reached would
	// fail every check below, each its own blocker.
	if _, err := cfg.Kube.Discovery().ServerVersion(); err != nil {
		p.line("BLOCKER", "the API server", "cannot be reached (every check needs it): "+err.Error())
		p.out.Flush()
		fmt.Fprintln(out, "1 blocker(s): fix it before the cutover (docs/cutover.md)")
		return ErrBlocked
	}
	p.permissions(ctx)
	p.secrets(ctx)
	src, err := kube.New(kube.Config{REST: cfg.REST, Mode: kube.ModePool, KubeconfigData: true, ImageMode: true, SyncWait: cfg.SyncWait,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src.Start(sctx)
	p.pools(ctx, src)
	p.out.Flush()
	if p.blockers > 0 {
		fmt.Fprintf(out, "%d blocker(s): fix them before the cutover (docs/cutover.md)\n", p.blockers)
		return ErrBlocked
	}
	fmt.Fprintln(out, "no blockers")
	return nil
}

// preflight is one report: what it found, and how many blockers.
type preflight struct {
	out      *tabwriter.Writer
	kube     kubernetes.Interface
	user     string // the ServiceAccount checked (namespace:name), or "" for the kubeconfig's own identity
	blockers int
}

func (p *preflight) line(state, what, detail string) {
	if state == "BLOCKER" {
		p.blockers++
	}
	fmt.Fprintf(p.out, "  %s\t%s\t%s\n", state, what, detail)
}

// permissions asks the API server, need by need, verb by verb.
func (p *preflight) permissions(ctx context.Context) {
	who := "this kubeconfig's identity"
	if p.user != "" {
		who = p.user
	}
	fmt.Fprintf(p.out, "permissions of %s:\n", who)
	for _, n := range needs {
		var missing []string
		for _, v := range n.verbs {
			ok, err := p.allowed(ctx, v, n)
			if err != nil {
				p.line("BLOCKER", n.String(), "cannot ask the API server: "+err.Error())
				return
			}
			if !ok {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			p.line("BLOCKER", n.String(), "missing: "+strings.Join(missing, ", ")+" (deploy/openshift/rbac.yaml grants it)")
			continue
		}
		p.line("ok", n.String(), "")
	}
}

func (p *preflight) allowed(ctx context.Context, verb string, n need) (bool, error) {
	attrs := &authorizationv1.ResourceAttributes{Verb: verb, Group: n.gvr.Group, Version: n.gvr.Version, Resource: n.gvr.Resource, Namespace: n.namespace, Name: n.name}
	if p.user == "" {
		r, err := p.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, err
	}
	ns, _, _ := strings.Cut(strings.TrimPrefix(p.user, "system:serviceaccount:"), ":")
	r, err := p.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: p.user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, ResourceAttributes: attrs}}, metav1.CreateOptions{})
	return err == nil && r.Status.Allowed, err
}

// secrets checks the two Secrets OpenShift's DaemonSet mounts, which mcs's
// mounts too; an identity that may not read Secrets (mcs's own) is told
// they were not checked.
func (p *preflight) secrets(ctx context.Context) {
	fmt.Fprintln(p.out, "objects:")
	for _, s := range []struct{ name, keys string }{{"machine-config-server-tls", "tls.crt tls.key"}, {"node-bootstrapper-token", "token"}} {
		what := "Secret " + kube.MCONamespace + "/" + s.name
		sec, err := p.kube.CoreV1().Secrets(kube.MCONamespace).Get(ctx, s.name, metav1.GetOptions{})
		switch {
		case apierrors.IsForbidden(err):
			p.line("unchecked", what, "this identity may not read Secrets (mcs never does: the DaemonSet mounts it)")
			continue
		case apierrors.IsNotFound(err):
			p.line("BLOCKER", what, "missing: the DaemonSet mounts it")
			continue
		case err != nil:
			p.line("BLOCKER", what, err.Error())
			continue
		}
		for _, k := range strings.Fields(s.keys) {
			if len(sec.Data[k]) == 0 {
				p.line("BLOCKER", what, "has no "+k)
			}
		}
		p.line("ok", what, "")
	}
}

// pools reads the cluster as mcs start does and reports each pool.
func (p *preflight) pools(ctx context.Context, src *kube.Source) {
	in, err := src.Load(ctx)
	if err != nil {
		p.line("BLOCKER", "the cluster's objects", "not read: "+err.Error())
		return
	}
	if cc := src.ControllerConfigObject(); cc == nil {
		p.line("BLOCKER", "ControllerConfig/"+kube.DefaultControllerConfig, "missing: OpenShift's server answers every node 500 without it (mcs serves without the kubelet CA)")
	} else {
		p.line("ok", "ControllerConfig/"+kube.DefaultControllerConfig, "")
	}
	if src.KubeconfigCA() == nil {
		p.line("warning", "ConfigMap "+kube.MCONamespace+"/"+kube.KubeconfigDataName, "no ca-bundle.crt: nodes' kubeconfig gets the token's ca.crt, as from OpenShift's server")
	} else {
		p.line("ok", "ConfigMap "+kube.MCONamespace+"/"+kube.KubeconfigDataName, "")
	}
	fmt.Fprintln(p.out, "pools:")
	names := src.PoolNames()
	if len(names) == 0 {
		p.line("BLOCKER", "MachineConfigPools", "none")
	}
	for _, pool := range names {
		if err := in.Failed[pool]; err != nil {
			p.line("BLOCKER", pool, err.Error())
			continue
		}
		for _, r := range in.Results {
			if r.Pool == pool {
				p.line("ok", pool, poolReport(src, r))
			}
		}
	}
}

// poolReport is one pool as OpenShift's server serves it beside mcs.
func poolReport(src *kube.Source, r *render.Result) string {
	upstream := "?"
	same := "differs"
	if u := src.MachineConfig(r.Name); u != nil {
		raw, _, _ := unstructuredConfig(u.Object)
		if parsed, err := convert.Parse(raw); err == nil {
			upstream = parsed.Version.String()
			a, _ := convert.Encode(&parsed.Config, convert.Newest, false)
			b, _ := convert.Encode(&r.Config, convert.Newest, false)
			if string(a) == string(b) {
				same = "same"
			}
		}
	}
	image, why := src.PoolImage(r.Pool)
	mode := "image mode: no (" + why + ")"
	if image != "" {
		mode = "image mode: " + image
	}
	return fmt.Sprintf("%s: OpenShift serves it as written (spec %s, converted to what the node asks); mcs at spec %s, the lowest able; content %s; %s",
		r.Name, upstream, r.Spec, same, mode)
}

// unstructuredConfig is a MachineConfig's spec.config, as JSON.
func unstructuredConfig(obj map[string]any) ([]byte, bool, error) {
	spec, _ := obj["spec"].(map[string]any)
	cfg, ok := spec["config"]
	if !ok || cfg == nil {
		return []byte("{}"), false, nil
	}
	b, err := json.Marshal(cfg)
	return b, true, err
}
