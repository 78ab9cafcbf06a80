package deploy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/testpki"
)

// The configuration for any Kubernetes is the OpenShift manifest's, every
// field but the client config and the service CA's annotation: one source.
func TestAdmitWebhookOneSource(t *testing.T) {
	ca := testpki.NewCA(t).PEM
	var want admissionregistrationv1.MutatingWebhookConfiguration
	data, err := os.ReadFile(filepath.Join("openshift", "admit", "webhook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &want); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		client WebhookClient
		url    string
	}{
		{"url without a path", WebhookClient{URL: "https://127.0.0.1:9443", CABundle: ca}, "https://127.0.0.1:9443/mutate"},
		{"url with a path", WebhookClient{URL: "https://admit.example:8443/x/mutate", CABundle: ca}, "https://admit.example:8443/x/mutate"},
		{"service", WebhookClient{Namespace: "mcs", Name: "mcs-admit", CABundle: ca}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := AdmitWebhook(c.client)
			if err != nil {
				t.Fatal(err)
			}
			var got admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(out, &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if _, ok := got.Annotations[openShiftInjectCA]; ok || strings.Contains(string(out), "creationTimestamp") {
				t.Errorf("OpenShift's annotation or an empty timestamp kept:\n%s", out)
			}
			if len(got.Webhooks) != len(want.Webhooks) {
				t.Fatalf("%d webhooks, want %d", len(got.Webhooks), len(want.Webhooks))
			}
			for i, w := range got.Webhooks {
				cc := w.ClientConfig
				if string(cc.CABundle) != string(ca) {
					t.Errorf("caBundle %q", cc.CABundle)
				}
				if c.url != "" && (cc.URL == nil || *cc.URL != c.url || cc.Service != nil) {
					t.Errorf("clientConfig %+v, want url %s", cc, c.url)
				}
				if c.url == "" && (cc.URL != nil || cc.Service == nil || cc.Service.Namespace != "mcs" || cc.Service.Name != "mcs-admit" || *cc.Service.Path != mutatePath || *cc.Service.Port != 443) {
					t.Errorf("clientConfig %+v, want the Service", cc)
				}
				w.ClientConfig = want.Webhooks[i].ClientConfig
				if !reflect.DeepEqual(w, want.Webhooks[i]) {
					t.Errorf("webhook %d differs from deploy/openshift/admit/webhook.yaml's:\n%s", i, out)
				}
			}
		})
	}
}

// What the API server would refuse, or could not use, is refused here,
// naming the field.
func TestAdmitWebhookRefuses(t *testing.T) {
	ca := testpki.NewCA(t)
	for _, c := range []struct {
		name   string
		client WebhookClient
		want   string
	}{
		{"http", WebhookClient{URL: "http://127.0.0.1:9443", CABundle: ca.PEM}, `url: "http://127.0.0.1:9443": want https://`},
		{"query", WebhookClient{URL: "https://h/mutate?x=1", CABundle: ca.PEM}, "url: \"https://h/mutate?x=1\": the API server refuses a query"},
		{"no host", WebhookClient{URL: "https:///mutate", CABundle: ca.PEM}, "no host"},
		{"port", WebhookClient{URL: "https://h:0", CABundle: ca.PEM}, "port 0 out of range"},
		{"both", WebhookClient{URL: "https://h", Namespace: "a", Name: "b", CABundle: ca.PEM}, "url: a URL or a Service, not both"},
		{"neither", WebhookClient{CABundle: ca.PEM}, "no URL and no Service"},
		{"no bundle", WebhookClient{URL: "https://h"}, "caBundle: empty"},
		{"a key", WebhookClient{URL: "https://h", CABundle: ca.Serving(t).KeyPEM}, "caBundle: a PEM "},
		{"not PEM", WebhookClient{URL: "https://h", CABundle: []byte("ca.crt\n")}, "caBundle: no PEM certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := AdmitWebhook(c.client)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
