package pki

import (
	"context"
	"crypto/x509"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ignition-mcs/mcs/source/kube"
)

// Infrastructures is the cluster's Infrastructure, whose api-int host and
// internal IPs the serving certificate names.
var Infrastructures = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "infrastructures"}

// Clients reach the API server.
type Clients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// cluster is everything one pass reads.
type cluster struct {
	cur         current
	signerSec   *corev1.Secret
	bundleCM    *corev1.ConfigMap
	servingSec  *corev1.Secret
	userData    []corev1.Secret // openshift-machine-api Secrets with userData
	tokens      map[string]*corev1.Secret
	pools       map[string]string // name → UID
	hosts       []string          // serving certificate SANs
	ignitionURL string            // host:port pointer configs fetch from
}

// readAttempts bounds how often read starts over because another writer
// (the controller, or `mcs pki rotate` beside it) changed the PKI meanwhile.
const readAttempts = 5

// read gathers the cluster's PKI objects, pools and Infrastructure as one
// state. A pass reading the signer before another writer's rotation and
// the serving Secret after it would plan from the old CA with the new
// certificate, and write that certificate without the cross-signature a
// node trusting the old CA needs (and the bundle led by the old CA), with
// resourceVersions fresh enough to succeed. So the signer, bundle and
// serving objects are read again at the end, and the read starts over if
// any of them changed meanwhile. An object that does not parse is
// reported in cur.problems and planned anew.
func read(ctx context.Context, c Clients) (*cluster, error) {
	moved := map[string]bool{}
	for range readAttempts {
		cl, err := readOnce(ctx, c)
		if err != nil {
			return nil, err
		}
		changed, err := cl.changedSince(ctx, c)
		if err != nil || len(changed) == 0 {
			return cl, err
		}
		for _, o := range changed {
			moved[o] = true
		}
	}
	return nil, fmt.Errorf("reading the PKI objects (%d times): %w", readAttempts, &conflictError{Objects: sortedKeys(moved)})
}

// changedSince names the signer, bundle and serving objects that are no
// longer the versions cl read (or no longer absent, or gone).
func (cl *cluster) changedSince(ctx context.Context, c Clients) ([]string, error) {
	signer, err := getSecret(ctx, c, mcoNamespace, signerName)
	if err != nil {
		return nil, err
	}
	serving, err := getSecret(ctx, c, mcoNamespace, servingName)
	if err != nil {
		return nil, err
	}
	bundle, err := getConfigMap(ctx, c, mcoNamespace, bundleName)
	if err != nil {
		return nil, err
	}
	var out []string
	if !sameVersion(signer, cl.signerSec) {
		out = append(out, objectName("secret", mcoNamespace, signerName))
	}
	if !sameVersion(serving, cl.servingSec) {
		out = append(out, objectName("secret", mcoNamespace, servingName))
	}
	if !sameVersion(bundle, cl.bundleCM) {
		out = append(out, objectName("configmap", mcoNamespace, bundleName))
	}
	return out, nil
}

// sameVersion compares two reads of one object by resourceVersion; nil is
// absent.
func sameVersion[T interface {
	comparable
	GetResourceVersion() string
}](a, b T) bool {
	var none T
	if a == none || b == none {
		return a == b
	}
	return a.GetResourceVersion() == b.GetResourceVersion()
}

func readOnce(ctx context.Context, c Clients) (*cluster, error) {
	cl := &cluster{tokens: map[string]*corev1.Secret{}, pools: map[string]string{}}
	var err error
	if cl.signerSec, err = getSecret(ctx, c, mcoNamespace, signerName); err != nil {
		return nil, err
	}
	if cl.servingSec, err = getSecret(ctx, c, mcoNamespace, servingName); err != nil {
		return nil, err
	}
	if cl.bundleCM, err = getConfigMap(ctx, c, mcoNamespace, bundleName); err != nil {
		return nil, err
	}
	if err := cl.readPKI(ctx, c); err != nil {
		return nil, err
	}
	if err := cl.readPools(ctx, c); err != nil {
		return nil, err
	}
	return cl, cl.readInfrastructure(ctx, c)
}

func getSecret(ctx context.Context, c Clients, ns, name string) (*corev1.Secret, error) {
	return getOrNil(ctx, c.Kube.CoreV1().Secrets(ns).Get, "secret", ns, name)
}

func getConfigMap(ctx context.Context, c Clients, ns, name string) (*corev1.ConfigMap, error) {
	return getOrNil(ctx, c.Kube.CoreV1().ConfigMaps(ns).Get, "configmap", ns, name)
}

// getOrNil is get's object, or nil where there is none.
func getOrNil[T any](ctx context.Context, get func(context.Context, string, metav1.GetOptions) (*T, error), kind, ns, name string) (*T, error) {
	o, err := get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, ns, name, err)
	}
	return o, nil
}

// readPKI parses the signer, bundle and serving objects and the CAs the
// user-data Secrets (and the installer's kube-system/root-ca) carry.
func (cl *cluster) readPKI(ctx context.Context, c Clients) error {
	cur := &cl.cur
	if s := cl.signerSec; s != nil {
		p, _, err := parsePair(s.Data["tls.crt"], s.Data["tls.key"])
		if err != nil {
			cur.problems = append(cur.problems, fmt.Sprintf("secret %s/%s: %v", mcoNamespace, signerName, err))
		} else if !p.cert.IsCA {
			cur.problems = append(cur.problems, fmt.Sprintf("secret %s/%s: tls.crt is not a CA", mcoNamespace, signerName))
		} else {
			cur.signer = p
		}
		cur.cross, _ = parseCerts(s.Data[crossKey])
	}
	if cl.bundleCM != nil {
		b, err := parseCerts([]byte(cl.bundleCM.Data[bundleKey]))
		if err != nil {
			cur.problems = append(cur.problems, fmt.Sprintf("configmap %s/%s: %s: %v", mcoNamespace, bundleName, bundleKey, err))
		}
		cur.bundle = b
	}
	if s := cl.servingSec; s != nil {
		p, chain, err := parsePair(s.Data["tls.crt"], s.Data["tls.key"])
		if err != nil {
			cur.problems = append(cur.problems, fmt.Sprintf("secret %s/%s: %v", mcoNamespace, servingName, err))
		}
		cur.serving, cur.served = p, chain
	}
	if root, err := c.Kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "root-ca", metav1.GetOptions{}); err == nil {
		certs, _ := parseCerts([]byte(root.Data["ca.crt"]))
		cur.carried = append(cur.carried, certs...)
	}
	list, err := c.Kube.CoreV1().Secrets(mapiNamespace).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("listing secrets in %s: %w", mapiNamespace, err)
	}
	for _, s := range list.Items {
		if _, ok := s.Data[userDataKey]; !ok {
			continue
		}
		cl.userData = append(cl.userData, s)
		if p, err := readPointer(s.Data[userDataKey]); err == nil {
			cur.carried = append(cur.carried, p.CAs...)
		}
	}
	sort.Slice(cl.userData, func(i, j int) bool { return cl.userData[i].Name < cl.userData[j].Name })
	return nil
}

func (cl *cluster) readPools(ctx context.Context, c Clients) error {
	pools, err := c.Dynamic.Resource(kube.MachineConfigPools).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	for _, p := range pools.Items {
		cl.pools[p.GetName()] = string(p.GetUID())
	}
	toks, err := c.Kube.CoreV1().Secrets(mcoNamespace).List(ctx, metav1.ListOptions{LabelSelector: tokenLabel})
	if err != nil {
		return fmt.Errorf("listing pool token secrets: %w", err)
	}
	for i := range toks.Items {
		s := &toks.Items[i]
		cl.tokens[s.Labels[tokenLabel]] = s
	}
	return nil
}

// readInfrastructure finds the SANs and the pointer configs' host as
// upstream does: the api-int host and the platform's API internal IPs.
func (cl *cluster) readInfrastructure(ctx context.Context, c Clients) error {
	infra, err := c.Dynamic.Resource(Infrastructures).Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("infrastructure/cluster: %w", err)
	}
	apiInt, _, _ := unstructured.NestedString(infra.Object, "status", "apiServerInternalURI")
	host := hostOf(apiInt)
	if host == "" {
		return fmt.Errorf("infrastructure/cluster: no status.apiServerInternalURI")
	}
	ips := internalIPs(infra)
	cl.hosts = append([]string{host}, ips...)
	var vips []string
	if t, _, _ := unstructured.NestedString(infra.Object, "status", "platformStatus", "type"); vipPlatforms[t] {
		vips = ips
	}
	cl.ignitionURL, err = ignitionHost(apiInt, vips)
	return err
}

// vipPlatforms are those whose pointer configs upstream points at the
// first API internal IP rather than the api-int name.
var vipPlatforms = map[string]bool{"BareMetal": true, "OpenStack": true, "Ovirt": true, "VSphere": true}

func internalIPs(infra *unstructured.Unstructured) []string {
	t, _, _ := unstructured.NestedString(infra.Object, "status", "platformStatus", "type")
	if t == "" {
		return nil
	}
	field := strings.ToLower(t[:1]) + t[1:]
	switch t {
	case "BareMetal":
		field = "baremetal"
	case "OpenStack":
		field = "openstack"
	}
	ips, _, _ := unstructured.NestedStringSlice(infra.Object, "status", "platformStatus", field, "apiServerInternalIPs")
	return ips
}

// tlsAnnotations are library-go's, so that its tools (and upstream's
// operator, should it come back) read the same dates.
func tlsAnnotations(c *x509.Certificate) map[string]string {
	return map[string]string{
		"auth.openshift.io/certificate-not-before": c.NotBefore.UTC().Format(time.RFC3339),
		"auth.openshift.io/certificate-not-after":  c.NotAfter.UTC().Format(time.RFC3339),
		"auth.openshift.io/certificate-issuer":     c.Issuer.CommonName,
	}
}

// conflictError is a pass given up because another writer (the
// controller, or `mcs pki rotate` beside it) changed the objects it names
// under it: between its reads, or between a read and the write after it.
type conflictError struct {
	// Objects are "secret namespace/name" or "configmap namespace/name".
	Objects []string
	// Err is the API server's refusal of the write, when one was refused.
	Err error
}

func (e *conflictError) Error() string {
	s := strings.Join(e.Objects, ", ") + " changed by someone else meanwhile"
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

func (e *conflictError) Unwrap() error { return e.Err }

// objectName is how errors and changes name an object.
func objectName(kind, ns, name string) string { return kind + " " + ns + "/" + name }

func poolsGVR() schema.GroupVersionResource { return kube.MachineConfigPools }
