package deploy

import (
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// admitWebhook is the one MutatingWebhookConfiguration of mcs admit: the
// OpenShift deployment applies it as it is, AdmitWebhook derives every
// other from it, so rules, timeout and failure policy cannot drift apart.
//
//go:embed openshift/admit/webhook.yaml
var admitWebhook []byte

// openShiftInjectCA is the service CA's annotation: only OpenShift fills
// caBundle from it.
const openShiftInjectCA = "service.beta.openshift.io/inject-cabundle"

// WebhookClient is how the API server reaches mcs admit: URL or Service,
// and the CA bundle (PEM) that verifies its serving certificate.
type WebhookClient struct {
	URL       string // https://host:port[/path]; path "" is mutatePath
	Namespace string // with Name: a Service, port 443
	Name      string
	CABundle  []byte
}

// ClientError is a WebhookClient the API server would not use; Field is
// url, service or caBundle.
type ClientError struct {
	Field string
	Err   error
}

func (e *ClientError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *ClientError) Unwrap() error { return e.Err }

// mutatePath is where mcs admit reviews (admit.MutatePath; deploy does not
// import the webhook).
const mutatePath = "/mutate"

// AdmitWebhook is deploy/openshift/admit/webhook.yaml with its client
// config replaced by c and OpenShift's CA injection removed: the
// configuration a cluster without OpenShift's service CA applies.
func AdmitWebhook(c WebhookClient) ([]byte, error) {
	cc, err := c.clientConfig()
	if err != nil {
		return nil, err
	}
	var w admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(admitWebhook, &w); err != nil {
		return nil, fmt.Errorf("deploy/openshift/admit/webhook.yaml: %w", err)
	}
	delete(w.Annotations, openShiftInjectCA)
	if len(w.Annotations) == 0 {
		w.Annotations = nil
	}
	for i := range w.Webhooks {
		w.Webhooks[i].ClientConfig = cc
	}
	// The typed object keeps every field of the manifest; the map drops the
	// empty creationTimestamp its encoding would add.
	var m map[string]any
	b, err := yaml.Marshal(w)
	if err == nil {
		err = yaml.Unmarshal(b, &m)
	}
	if err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(m)
}

func (c WebhookClient) clientConfig() (admissionregistrationv1.WebhookClientConfig, error) {
	var cc admissionregistrationv1.WebhookClientConfig
	switch {
	case c.URL != "" && c.Name != "":
		return cc, &ClientError{"url", errors.New("a URL or a Service, not both")}
	case c.Name != "":
		if c.Namespace == "" {
			return cc, &ClientError{"service", fmt.Errorf("%q: want NAMESPACE/NAME", c.Name)}
		}
		port := int32(443)
		path := mutatePath
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: c.Namespace, Name: c.Name, Path: &path, Port: &port}
	case c.URL != "":
		u, err := webhookURL(c.URL)
		if err != nil {
			return cc, &ClientError{"url", err}
		}
		cc.URL = &u
	default:
		return cc, &ClientError{"url", errors.New("no URL and no Service: say where the API server reaches mcs admit")}
	}
	if err := checkBundle(c.CABundle); err != nil {
		return cc, &ClientError{"caBundle", err}
	}
	cc.CABundle = c.CABundle
	return cc, nil
}

// webhookURL checks what the API server accepts (https, a host, no query,
// fragment or user) and puts the webhook's path on a URL without one.
func webhookURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	switch {
	case u.Scheme != "https":
		return "", fmt.Errorf("%q: want https:// (the API server calls webhooks over TLS only)", s)
	case u.Hostname() == "":
		return "", fmt.Errorf("%q: no host", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", fmt.Errorf("%q: the API server refuses a query, fragment or user in a webhook URL", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: port %s out of range", s, p)
		}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = mutatePath
	}
	return u.String(), nil
}

// checkBundle wants PEM certificates and nothing else: a key or a typo'd
// file would make every call fail TLS, and failurePolicy Ignore hides it.
func checkBundle(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty: the API server could not verify mcs admit's certificate")
	}
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return fmt.Errorf("a PEM %s, want CERTIFICATE blocks only", blk.Type)
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate in it")
	}
	return nil
}
