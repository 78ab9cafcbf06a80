// Package deploy holds the manifests mcs is deployed with, for the commands that apply them.
package deploy

import (
	"embed"
	"fmt"
	"path"

	"sigs.k8s.io/yaml"
)

//go:embed openshift/*.yaml
var openshift embed.FS

// OpenShift is deploy/openshift's manifests in its kustomization's order,
// each file's bytes: what `oc apply -k deploy/openshift` applies.
func OpenShift() ([][]byte, error) {
	k, err := openshift.ReadFile("openshift/kustomization.yaml")
	if err != nil {
		return nil, err
	}
	var kust struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(k, &kust); err != nil {
		return nil, fmt.Errorf("deploy/openshift/kustomization.yaml: %w", err)
	}
	out := make([][]byte, 0, len(kust.Resources))
	for _, r := range kust.Resources {
		b, err := openshift.ReadFile(path.Join("openshift", r))
		if err != nil {
			return nil, fmt.Errorf("deploy/openshift/kustomization.yaml: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}
