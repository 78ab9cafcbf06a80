package render

import (
	"slices"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/releases"
)

// lowestRead writes the config at the lowest spec from target up to
// ceiling that its readers read as the config itself: OpenShift's
// operator and daemon read a stored rendered config with Ignition's own
// ParseCompatibleVersion (releases.Readers), whose steps up are not the
// encoder's (Ignition's 3.4→3.5 step drops a Tang advertisement, and
// v2.15.0 to v2.20.0 mask special mode bits on the way to 3.4). The config
// itself is the encoding at the newest spec those readers read (or what
// the config needs, if more), which they read without a step. With none
// from target up to ceiling, lost says what the readers lose at the
// highest spec tried, and top is the spec it needs; else lost says what
// they lose at the spec below the one written (none when it is target).
func lowestRead(enc *convert.Encoder, target, ceiling, need convert.Version) (out *convert.Encoded, at, top convert.Version, lost []convert.Loss, err error) {
	top = releases.NewestSpec()
	if top.Less(need) {
		top = need
	}
	if target.Major != 3 || !target.Less(top) {
		out, err = enc.Encode(target, nil)
		return out, target, top, nil, err
	}
	orig, err := enc.Encode(top, nil)
	if err != nil {
		return nil, target, top, nil, err
	}
	rollback := convert.Version{}
	if ceiling.Less(top) {
		rollback = ceiling
	}
	judge, err := convert.NewJudge(orig.JSON, releases.Readers(rollback, convert.Version{}))
	if err != nil {
		return nil, target, top, nil, err
	}
	for _, v := range convert.OutputVersions[slices.Index(convert.OutputVersions, target):] {
		if ceiling.Less(v) {
			break
		}
		if v == top {
			return orig, v, top, lost, nil
		}
		out, err := enc.Encode(v, nil)
		if err != nil {
			return nil, v, top, nil, err
		}
		losses := judge.Losses(out.JSON)
		if len(losses) == 0 {
			return out, v, top, lost, nil
		}
		lost = losses
	}
	return nil, target, top, lost, nil
}

// lostReasons are the reasons a config needs spec top for what its
// readers lose below it (above the ceiling, or written at top), named as MinVersion names the field (else "the
// value a reader reads").
func lostReasons(lost []convert.Loss, reasons []convert.Reason, top convert.Version) []convert.Reason {
	out, from := convert.LossReasons(lost, reasons, top)
	for i, l := range from {
		out[i].What += " (" + l.Reader.Who + " reads it otherwise at spec " + l.Stored.String() + ": " + l.Message + ")"
	}
	return out
}
