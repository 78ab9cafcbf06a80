package kube

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The ConfigMap whose ca-bundle.crt is the CA of the kubeconfig served to
// nodes (the API server's serving CA, kept current by the MCO as it
// rotates), read with Config.KubeconfigData.
const (
	MCONamespace       = "openshift-machine-config-operator"
	KubeconfigDataName = "kubeconfig-data"
	kubeconfigDataKey  = "ca-bundle.crt"
)

// ConfigMaps and Routes are the core and route.openshift.io resources read.
var (
	ConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	Routes     = schema.GroupVersionResource{Group: "route.openshift.io", Version: "v1", Resource: "routes"}
)

// registryNamespace holds the cluster's image registry: images behind its
// Routes are not served to booting nodes (see desiredImage).
const registryNamespace = "openshift-image-registry"

// KubeconfigCA is ca-bundle.crt of ConfigMap kubeconfig-data, or nil when
// there is none (no such ConfigMap or key, or Config.KubeconfigData off).
// The MCO writes it as binaryData; data is read too, as its daemon reads
// it (base64 or plain).
func (c *caches) KubeconfigCA() []byte {
	u := c.cached(c.configMaps, MCONamespace+"/"+KubeconfigDataName) // a namespaced object's store key
	if u == nil {
		return nil
	}
	return configMapBytes(u, kubeconfigDataKey)
}

func configMapBytes(u *unstructured.Unstructured, key string) []byte {
	if s, ok, _ := unstructured.NestedString(u.Object, "binaryData", key); ok {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return b
		}
	}
	if s, ok, _ := unstructured.NestedString(u.Object, "data", key); ok {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return b
		}
		return []byte(s)
	}
	return nil
}

func kubeconfigDataKeyOf(u *unstructured.Unstructured) string {
	return string(configMapBytes(u, kubeconfigDataKey))
}

// routeHosts are the hosts of the registry's Routes.
func (c *caches) routeHosts() []string {
	var out []string
	for _, u := range Objects(c.routes) {
		if h := field(u, "spec", "host"); h != "" {
			out = append(out, h)
		}
	}
	return out
}
