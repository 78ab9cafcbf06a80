// Package mctest writes the MachineConfigs the tests render, so that every test tree holds objects of one shape.
package mctest

import (
	"strings"

	"sigs.k8s.io/yaml"
)

// Config is a MachineConfig: the fields tests vary, and the one Ignition
// config version most of them use.
type Config struct {
	Name, Role string
	Version    string         // of spec.config.ignition; "" is 3.2.0
	Files      []File         // spec.config.storage.files
	Config     map[string]any // more of spec.config (kernelArguments …)
	Spec       map[string]any // spec beside config (kernelType, extensions …)
}

// File is one storage file; a nil Mode is 420 (0644), any other is written
// as it is so that a test can write an invalid one.
type File struct {
	Path, Source string
	Mode         any
	Overwrite    bool
}

// YAML is c as a MachineConfig document.
func (c Config) YAML() string {
	version := c.Version
	if version == "" {
		version = "3.2.0"
	}
	config := map[string]any{"ignition": map[string]any{"version": version}}
	for k, v := range c.Config {
		config[k] = v
	}
	if len(c.Files) > 0 {
		files := make([]any, len(c.Files))
		for i, f := range c.Files {
			mode := f.Mode
			if mode == nil {
				mode = 420
			}
			file := map[string]any{"path": f.Path, "mode": mode, "contents": map[string]any{"source": f.Source}}
			if f.Overwrite {
				file["overwrite"] = true
			}
			files[i] = file
		}
		config["storage"] = map[string]any{"files": files}
	}
	spec := map[string]any{"config": config}
	for k, v := range c.Spec {
		spec[k] = v
	}
	b, err := yaml.Marshal(map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfig",
		"metadata": map[string]any{
			"name":   c.Name,
			"labels": map[string]any{"machineconfiguration.openshift.io/role": c.Role},
		},
		"spec": spec,
	})
	if err != nil {
		panic(err) // maps of strings, numbers and slices always marshal
	}
	return string(b)
}

// MachineConfig is the YAML of a MachineConfig named name for role whose
// one file, /etc/<name>, holds content (a data URL's, so URL-escaped).
func MachineConfig(name, role, content string) string {
	return Config{Name: name, Role: role, Files: []File{{Path: "/etc/" + name, Source: "data:," + content}}}.YAML()
}

// Pool is the YAML of a custom pool named name, selecting the worker
// MachineConfigs and those of its own role, as OpenShift's documentation
// has one made.
func Pool(name string) string {
	return strings.ReplaceAll(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: POOL
spec:
  machineConfigSelector:
    matchExpressions:
    - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, POOL]}
  nodeSelector:
    matchLabels: {node-role.kubernetes.io/POOL: ""}
`, "POOL", name)
}

// RolePool is the YAML of a pool named role selecting the MachineConfigs
// labelled with that role, as OpenShift's own worker and master pools do.
func RolePool(role string) string {
	return strings.ReplaceAll(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: ROLE}
spec: {machineConfigSelector: {matchLabels: {machineconfiguration.openshift.io/role: ROLE}}}
`, "ROLE", role)
}
