package convert

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/util"
	"github.com/coreos/ignition/v2/config/v3_0"
	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	"github.com/coreos/ignition/v2/config/v3_1"
	tr31 "github.com/coreos/ignition/v2/config/v3_1/translate"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	"github.com/coreos/ignition/v2/config/v3_2"
	tr32 "github.com/coreos/ignition/v2/config/v3_2/translate"
	t32 "github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/coreos/ignition/v2/config/v3_3"
	tr33 "github.com/coreos/ignition/v2/config/v3_3/translate"
	t33 "github.com/coreos/ignition/v2/config/v3_3/types"
	"github.com/coreos/ignition/v2/config/v3_4"
	tr34 "github.com/coreos/ignition/v2/config/v3_4/translate"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	"github.com/coreos/ignition/v2/config/v3_5"
	tr35 "github.com/coreos/ignition/v2/config/v3_5/translate"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/v3_6"
	tr36 "github.com/coreos/ignition/v2/config/v3_6/translate"
	"github.com/coreos/vcontext/report"
)

// Reader is a program that reads stored configs with Ignition's own
// config/v3_N.ParseCompatibleVersion at its newest spec N: OpenShift's
// machine-config-operator and daemon (ParseAndConvertConfig), and Ignition
// itself. Such a reader translates an older config up with Ignition's own
// steps, not convert's repaired ones: Ignition's 3.4→3.5 step drops a Tang
// advertisement, so a 3.5 reader reads a 3.4 config with one without it.
type Reader struct {
	Spec Version // the newest spec it reads: 3.0.0 to 3.6.0
	// Who names it for people, e.g. "OpenShift 4.18.7's
	// machine-config-operator (Ignition v2.15.0)".
	Who string
}

// readAs is raw as a reader of spec v reads it: Ignition's own
// config/v3_N.ParseCompatibleVersion, whose result (a value of that spec's
// types.Config) it returns.
func readAs(raw []byte, v Version) (any, error) {
	p, ok := ignitionReaders[v]
	if !ok {
		return nil, &UnsupportedVersionError{Version: v.String(), Output: true}
	}
	cfg, rpt, err := p.parse(raw)
	return cfg, readError(err, rpt)
}

// readError is a reader's error with its report, as OpenShift logs it.
func readError(err error, rpt report.Report) error {
	if err == nil {
		return nil
	}
	if s := rpt.String(); s != "" {
		return fmt.Errorf("%w: %s", err, s)
	}
	return err
}

// readers are each spec-3 version's ParseCompatibleVersion and the step up
// to it from the version before (config/v3_N/translate.Translate): a
// reader of spec N is the step up applied to a reader of N-1, for configs
// below N (exactly how ParseCompatibleVersion is written), so one parse
// serves all readers of a config.
var ignitionReaders = map[Version]struct {
	parse func([]byte) (any, report.Report, error)
	up    func(any) any
}{
	V3_0: {parse: func(b []byte) (any, report.Report, error) { return v3_0.ParseCompatibleVersion(b) }},
	V3_1: {
		parse: func(b []byte) (any, report.Report, error) { return v3_1.ParseCompatibleVersion(b) },
		up:    func(c any) any { return tr31.Translate(c.(t30.Config)) },
	},
	V3_2: {
		parse: func(b []byte) (any, report.Report, error) { return v3_2.ParseCompatibleVersion(b) },
		up:    func(c any) any { return tr32.Translate(c.(t31.Config)) },
	},
	V3_3: {
		parse: func(b []byte) (any, report.Report, error) { return v3_3.ParseCompatibleVersion(b) },
		up:    func(c any) any { return tr33.Translate(c.(t32.Config)) },
	},
	V3_4: {
		parse: func(b []byte) (any, report.Report, error) { return v3_4.ParseCompatibleVersion(b) },
		up:    func(c any) any { return tr34.Translate(c.(t33.Config)) },
	},
	V3_5: {
		parse: func(b []byte) (any, report.Report, error) { return v3_5.ParseCompatibleVersion(b) },
		up:    func(c any) any { return tr35.Translate(c.(t34.Config)) },
	},
	V3_6: {
		parse: func(b []byte) (any, report.Report, error) { return v3_6.ParseCompatibleVersion(b) },
		up:    func(c any) any { return tr36.Translate(c.(t35.Config)) },
	},
}

// views is one config as readers of several specs read it, parsed once.
type views struct {
	declared Version
	err      error           // the parse failed (every reader of declared or newer fails so)
	by       map[Version]any // by reader spec, declared or newer
}

// declaredVersion is the spec raw declares, found as Ignition finds it.
func declaredVersion(raw []byte) (Version, error) {
	if s, ok := quickVersion(raw); ok {
		return ParseVersion(s)
	}
	sv, _, err := util.GetConfigVersion(raw)
	return Version{int64(sv.Major), int64(sv.Minor), int64(sv.Patch)}, err
}

// readViews reads raw for readers of each of specs: one Ignition parse, at
// raw's own spec, stepped up with Ignition's own translations to the
// lowest of them that reads it, then to the others. Readers older than
// raw's spec are left out. That is what each reader's
// ParseCompatibleVersion does, without its version scan of the whole
// config at every spec on the way down (four of a 3.0 config read at 3.4,
// a third of the reading's time).
func readViews(raw []byte, specs []Version) *views {
	vs := &views{by: map[Version]any{}}
	if vs.declared, vs.err = declaredVersion(raw); vs.err != nil {
		return vs
	}
	vs.err = vs.stepUp(specs, func(v Version) (any, error) {
		c, err := readAs(raw, vs.declared)
		for at := vs.declared; err == nil && at.Less(v); {
			at = next(at)
			c = ignitionReaders[at].up(c)
		}
		return c, err
	})
	return vs
}

// stepUp fills vs.by for each of specs not older than vs.declared: first
// is the reading at the lowest of them, each next one Ignition's step up.
func (vs *views) stepUp(specs []Version, first func(Version) (any, error)) error {
	specs = slices.Clone(specs)
	slices.SortFunc(specs, Version.compare)
	var cur any
	var at Version
	for _, v := range slices.Compact(specs) {
		if v.Less(vs.declared) {
			continue
		}
		if cur == nil {
			var err error
			if cur, err = first(v); err != nil {
				return err
			}
			at = v
		}
		for at.Less(v) {
			at = next(at)
			cur = ignitionReaders[at].up(cur)
		}
		vs.by[v] = cur
	}
	return nil
}

// next is the spec-3 version after v.
func next(v Version) Version {
	i := slices.Index(OutputVersions, v)
	return OutputVersions[i+1]
}

// Loss is a difference between what a reader reads from a stored
// candidate and what it reads from the config it stands for.
type Loss struct {
	Reader Reader
	Stored Version // the candidate's spec
	// Problem is where the reader's two readings differ and how ("lost
	// a 44-byte string", "changed from 2541 to 493"); the zero Path with
	// a message when it cannot read the candidate at all.
	Problem
}

func (l Loss) String() string {
	return fmt.Sprintf("%s, reading with Ignition's own parser of spec %s, reads it stored at %s otherwise: %s", l.Reader.Who, l.Reader.Spec, l.Stored, l.Problem)
}

// Judge decides whether a stored config stands losslessly for an original
// one, by the readers' own code: a candidate is accepted when every reader
// whose spec it can read parses it, and reads it as it reads the original;
// a reader that cannot read the original (it is of a newer spec) must
// parse the candidate. The original's own spec is always a reader: a
// candidate must mean to Ignition what the original meant as written. Our
// converter's steps, repaired where Ignition's lose fields, never judge:
// they are not what others read with. A Judge parses the original once
// per reader spec; it is safe for concurrent use once made.
type Judge struct {
	readers []Reader
	specs   []Version
	orig    *views
}

// newJudgeOf reads orig, a spec-3 config, for readers and for Ignition at
// the spec orig declares. It fails when orig does not parse by Ignition's
// own parser of that spec.
func newJudgeOf(orig []byte, readers []Reader) (*Judge, error) {
	decl, err := declaredVersion(orig)
	if err != nil {
		return nil, fmt.Errorf("Ignition's own parser refuses it: %w", err)
	}
	j := newJudge(decl, readers)
	j.orig.err = j.orig.stepUp(j.specs, func(v Version) (any, error) { return readAs(orig, v) })
	if j.orig.err != nil {
		return nil, fmt.Errorf("Ignition's own parser of spec %s refuses it: %w", decl, j.orig.err)
	}
	return j, nil
}

// Judge is newJudgeOf of the config p was parsed from, without parsing it
// again: Parse read a spec-3 config with Ignition's own parser of its spec,
// which is what a reader of that spec reads. It fails for a config that is
// not spec 3.
func (p *Parsed) Judge(readers []Reader) (*Judge, error) {
	if p.declared == nil {
		return nil, fmt.Errorf("spec %s: only spec-3 configs are judged by Ignition's readers", p.Version)
	}
	j := newJudge(p.Version, readers)
	j.orig.err = j.orig.stepUp(j.specs, func(v Version) (any, error) {
		c := p.declared
		for at := p.Version; at.Less(v); {
			at = next(at)
			c = ignitionReaders[at].up(c)
		}
		return c, nil
	})
	return j, j.orig.err
}

// newJudge is a Judge of an original of spec decl for readers, and for
// Ignition at decl, with no readings yet.
func newJudge(decl Version, readers []Reader) *Judge {
	j := &Judge{orig: &views{declared: decl, by: map[Version]any{}}}
	// Readers of one spec read alike: the first names them.
	for _, r := range append(slices.Clip(readers), Reader{Spec: decl, Who: fmt.Sprintf("Ignition at spec %s (the spec the config is written at)", decl)}) {
		if _, ok := ignitionReaders[r.Spec]; ok && !slices.Contains(j.specs, r.Spec) {
			j.specs = append(j.specs, r.Spec)
			j.readers = append(j.readers, r)
		}
	}
	return j
}

// Losses is what the readers read otherwise from stored than from the
// original: none when stored stands for it losslessly. Readers of a spec
// older than stored's cannot read it and are not asked: a stored config
// above what a reader reads is the ceiling's concern.
func (j *Judge) Losses(stored []byte) []Loss {
	got := readViews(stored, j.specs)
	var out []Loss
	for _, r := range j.readers {
		if _, ok := ignitionReaders[r.Spec]; !ok || r.Spec.Less(got.declared) {
			continue
		}
		if got.err != nil {
			out = append(out, Loss{Reader: r, Stored: got.declared, Problem: Problem{Message: "it does not parse: " + got.err.Error()}})
			continue
		}
		want, ok := j.orig.by[r.Spec]
		if !ok {
			continue // the reader cannot read the original: parsing the candidate is all it can do
		}
		for _, p := range diff(want, got.by[r.Spec]) {
			out = append(out, Loss{Reader: r, Stored: got.declared, Problem: p})
		}
	}
	return out
}

// maxLossesShown bounds the losses a LossesError names.
const maxLossesShown = 5

// LossesError is a stored candidate that its readers read otherwise than
// the config it stands for.
type LossesError struct{ Losses []Loss }

func (e *LossesError) Error() string {
	s := make([]string, 0, min(len(e.Losses), maxLossesShown+1))
	for i, l := range e.Losses {
		if i == maxLossesShown {
			s = append(s, fmt.Sprintf("and %d more", len(e.Losses)-maxLossesShown))
			break
		}
		s = append(s, l.String())
	}
	return "not lossless as its readers read it: " + strings.Join(s, "; ")
}
