//go:build ignition_v2_19

package main

import (
	"github.com/coreos/ignition/v2/config/v3_4"
	"github.com/coreos/vcontext/report"
)

// spec is the newest stable spec of this Ignition (v2.19.0), which
// OpenShift 4.14 to 4.18 read every MachineConfig at.
const spec = "3.4.0"

// read is how such a release's machine-config-operator reads a config
// (IgnParseWrapper): ParseCompatibleVersion at its spec.
func read(raw []byte) (any, report.Report, error) { return v3_4.ParseCompatibleVersion(raw) }
