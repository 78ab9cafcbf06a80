package kube

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The image-mode (on-cluster layering) resources, read with Config.ImageMode.
var (
	MachineOSConfigs = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "machineosconfigs"}
	MachineOSBuilds  = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "machineosbuilds"}
)

// desiredImage is the layered OS image a new node of pool boots into, as
// upstream's resolveDesiredImageForPool chooses it, or "" and why not: the
// pool's MachineOSConfig has an image in its status, a MachineOSBuild of
// that MachineOSConfig for rendered (the config served) has succeeded, at
// least one of the pool's machines has updated, and the image is not in the
// cluster's own registry (no cluster DNS at first boot: the node boots the
// base image and updates once it has joined). Where upstream takes the
// first match of an unordered list, this takes the first by name, and a
// succeeded build before one that has not.
func (c *caches) desiredImage(pool *unstructured.Unstructured, rendered string) (image, why string) {
	if c.moscs == nil || c.mosbs == nil {
		return "", "the API server does not serve MachineOSConfigs and MachineOSBuilds"
	}
	var mosc *unstructured.Unstructured
	for _, u := range Objects(c.moscs) {
		if field(u, "spec", "machineConfigPool", "name") == pool.GetName() {
			mosc = u
			break
		}
	}
	if mosc == nil {
		return "", "no MachineOSConfig names the pool"
	}
	image = field(mosc, "status", "currentImagePullSpec")
	if image == "" {
		return "", fmt.Sprintf("MachineOSConfig/%s has no image in status.currentImagePullSpec yet", mosc.GetName())
	}
	var builds []*unstructured.Unstructured
	for _, u := range Objects(c.mosbs) {
		if field(u, "spec", "machineOSConfig", "name") == mosc.GetName() && field(u, "spec", "machineConfig", "name") == rendered {
			builds = append(builds, u)
		}
	}
	if len(builds) == 0 {
		return "", fmt.Sprintf("no MachineOSBuild of MachineOSConfig/%s for %s", mosc.GetName(), rendered)
	}
	if i := slices.IndexFunc(builds, succeeded); i < 0 {
		return "", fmt.Sprintf("MachineOSBuild/%s has not succeeded", builds[0].GetName())
	}
	if n, _ := count(pool.Object, "status", "updatedMachineCount"); n == 0 {
		return "", "no machine of the pool has updated to the image yet (status.updatedMachineCount is 0)"
	}
	if internalRegistry(image, c.routeHosts()) {
		return "", fmt.Sprintf("%s is in the cluster's own registry, which a booting node cannot resolve", image)
	}
	return image, ""
}

func field(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

// succeeded is a MachineOSBuild whose Succeeded condition is True.
func succeeded(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Succeeded" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// internalRegistry says whether image's registry is the cluster's own: a
// Service's cluster DNS name (image-registry.openshift-image-registry.svc:5000,
// and any other *.svc or *.svc.cluster.local host), which a node resolves
// only once it has joined, or a host of the registry's Routes (served with
// the ingress CA, which a booting node does not trust). Upstream lists the
// registry namespace's Services and Routes on every request and compares
// prefixes; Services need no read here, and the rule covers any namespace.
func internalRegistry(image string, routeHosts []string) bool {
	host, _, _ := strings.Cut(image, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if strings.HasSuffix(host, ".svc") || strings.HasSuffix(host, ".svc.cluster.local") {
		return true
	}
	return slices.ContainsFunc(routeHosts, func(r string) bool { return strings.EqualFold(r, host) })
}

// mosKey is what of a MachineOSConfig or MachineOSBuild desiredImage reads.
func mosKey(u *unstructured.Unstructured) string {
	return jsonKey([]any{u.GetName(), field(u, "spec", "machineConfigPool", "name"), field(u, "status", "currentImagePullSpec"),
		field(u, "spec", "machineOSConfig", "name"), field(u, "spec", "machineConfig", "name"), succeeded(u)})
}

func routeKey(u *unstructured.Unstructured) string {
	return u.GetName() + " " + field(u, "spec", "host")
}

// PoolImage is desiredImage for the pool named, at the rendered config it
// serves, for reports (mcs preflight); "" and why when it has none.
func (c *caches) PoolImage(pool string) (image, why string) {
	p := c.Pool(pool)
	if p == nil {
		return "", "no such pool"
	}
	name, _, err := renderedConfig(p)
	if err != nil {
		return "", err.Error()
	}
	return c.desiredImage(p, name)
}
