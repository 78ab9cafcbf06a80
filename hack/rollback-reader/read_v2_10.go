//go:build !ignition_v2_19

package main

import (
	"github.com/coreos/go-semver/semver"
	"github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/util"
	"github.com/coreos/ignition/v2/config/v3_0"
	"github.com/coreos/ignition/v2/config/v3_1"
	trans31 "github.com/coreos/ignition/v2/config/v3_1/translate"
	"github.com/coreos/ignition/v2/config/v3_2"
	trans32 "github.com/coreos/ignition/v2/config/v3_2/translate"
	"github.com/coreos/vcontext/report"
)

// spec is the newest stable spec of this Ignition (v2.10.1), which
// OpenShift 4.7 to 4.12 read every MachineConfig at.
const spec = "3.2.0"

// read is how such a release reads a config: each spec's own Parse, then
// this Ignition's steps up to 3.2, as its config.Parse does on the way to
// its experimental spec (v2.10.1 has no ParseCompatibleVersion).
func read(raw []byte) (any, report.Report, error) {
	var stub struct {
		Ignition struct{ Version string }
	}
	if rpt, err := util.HandleParseErrors(raw, &stub); err != nil {
		return nil, rpt, err
	}
	v, err := semver.NewVersion(stub.Ignition.Version)
	if err != nil {
		return nil, report.Report{}, errors.ErrInvalidVersion
	}
	switch v.String() {
	case "3.2.0":
		return v3_2.Parse(raw)
	case "3.1.0":
		c, rpt, err := v3_1.Parse(raw)
		if err != nil {
			return nil, rpt, err
		}
		return trans32.Translate(c), rpt, nil
	case "3.0.0":
		c, rpt, err := v3_0.Parse(raw)
		if err != nil {
			return nil, rpt, err
		}
		return trans32.Translate(trans31.Translate(c)), rpt, nil
	}
	return nil, report.Report{}, errors.ErrUnknownVersion
}
