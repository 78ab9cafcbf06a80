// Package mctest writes the small MachineConfig the source tests render, so that every test tree holds the same object.
package mctest

import "strings"

const machineConfig = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: NAME
  labels: {machineconfiguration.openshift.io/role: ROLE}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - {path: /etc/NAME, mode: 420, contents: {source: "data:,CONTENT"}}
`

// MachineConfig is the YAML of a MachineConfig named name for role whose
// one file, /etc/<name>, holds content (a data URL's, so URL-escaped).
func MachineConfig(name, role, content string) string {
	return strings.NewReplacer("NAME", name, "ROLE", role, "CONTENT", content).Replace(machineConfig)
}
