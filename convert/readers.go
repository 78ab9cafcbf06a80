package convert

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
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
	t36 "github.com/coreos/ignition/v2/config/v3_6/types"
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
	parse  func([]byte) (any, report.Report, error)
	up     func(any) any
	decode func([]byte) (any, error) // what the parse decodes, before it validates
}{
	V3_0: {
		parse:  func(b []byte) (any, report.Report, error) { return v3_0.ParseCompatibleVersion(b) },
		decode: decoder[t30.Config](),
	},
	V3_1: {
		parse:  func(b []byte) (any, report.Report, error) { return v3_1.ParseCompatibleVersion(b) },
		decode: decoder[t31.Config](),
		up:     func(c any) any { return tr31.Translate(c.(t30.Config)) },
	},
	V3_2: {
		parse:  func(b []byte) (any, report.Report, error) { return v3_2.ParseCompatibleVersion(b) },
		decode: decoder[t32.Config](),
		up:     func(c any) any { return tr32.Translate(c.(t31.Config)) },
	},
	V3_3: {
		parse:  func(b []byte) (any, report.Report, error) { return v3_3.ParseCompatibleVersion(b) },
		decode: decoder[t33.Config](),
		up:     func(c any) any { return tr33.Translate(c.(t32.Config)) },
	},
	V3_4: {
		parse:  func(b []byte) (any, report.Report, error) { return v3_4.ParseCompatibleVersion(b) },
		decode: decoder[t34.Config](),
		up:     func(c any) any { return tr34.Translate(c.(t33.Config)) },
	},
	V3_5: {
		parse:  func(b []byte) (any, report.Report, error) { return v3_5.ParseCompatibleVersion(b) },
		decode: decoder[t35.Config](),
		up:     func(c any) any { return tr35.Translate(c.(t34.Config)) },
	},
	V3_6: {
		parse:  func(b []byte) (any, report.Report, error) { return v3_6.ParseCompatibleVersion(b) },
		decode: decoder[t36.Config](),
		up:     func(c any) any { return tr36.Translate(c.(t35.Config)) },
	},
}

// decoder decodes JSON into a T as Ignition's parsers do
// (util.HandleParseErrors: encoding/json).
func decoder[T any]() func([]byte) (any, error) {
	return func(b []byte) (any, error) {
		var c T
		err := json.Unmarshal(b, &c)
		return c, err
	}
}

// decodeValid is what Ignition's Parse of spec v decodes of raw, where it
// is that spec's config, for valid.Passes to say whether the parse would
// stand (see readValid); false where valid is nil or raw is not so.
func decodeValid(raw []byte, v Version, valid *ValidItems) (any, bool) {
	r := ignitionReaders[v]
	if valid == nil || r.decode == nil {
		return nil, false
	}
	c, err := r.decode(raw)
	if err != nil || reflect.ValueOf(c).FieldByName("Ignition").FieldByName("Version").String() != v.String() {
		return nil, false
	}
	return c, true
}

// readValid is readAs(raw, v) for raw that a ValidItems can judge cheaply:
// Ignition's Parse of spec v is its decode, a check that the version is
// v, and its validation, whose only fatal findings are those of
// ValidateWithContext without the raw bytes (the context tree adds unused
// keys and positions, warnings both), which is what valid.Passes decides,
// a file or unit at a time (see ValidItems). Anything else, or a config
// valid does not pass, is read by readAs, which says what is wrong. A nil
// valid is readAs.
func readValid(raw []byte, v Version, valid *ValidItems) (any, error) {
	if c, ok := decodeValid(raw, v, valid); ok && valid.Passes(c) {
		return c, nil
	}
	return readAs(raw, v)
}

// declaredVersion is the spec raw declares, found as Ignition finds it.
func declaredVersion(raw []byte) (Version, error) {
	if s, ok := quickVersion(raw); ok {
		return ParseVersion(s)
	}
	sv, _, err := util.GetConfigVersion(raw)
	return Version{int64(sv.Major), int64(sv.Minor), int64(sv.Patch)}, err
}

// stepUp is c, a reading at spec from, as a reader of spec to reads it:
// Ignition's own steps up, one spec at a time, exactly as
// ParseCompatibleVersion applies them.
func stepUp(c any, from, to Version) any {
	for from.Less(to) {
		from = next(from)
		c = ignitionReaders[from].up(c)
	}
	return c
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
// a reader that cannot read the original (it is of an older spec) must
// parse the candidate. The original's own spec is always a reader: a
// candidate must mean to Ignition what the original meant as written. Our
// converter's steps, repaired where Ignition's lose fields, never judge:
// they are not what others read with.
//
// It is cheap because ParseCompatibleVersion is a chain: a reader of spec
// N reads a config of spec s<N as Ignition's step up to N of what a reader
// of N-1 reads, down to v3_s.Parse, which alone validates. So a candidate
// of spec s that a reader of the original's spec d reads as it reads the
// original is read alike by every reader newer than d (the same steps, the
// same input), and one that v3_s.Parse accepts every reader of s or newer
// parses: one parse of the candidate, d-s steps up and one comparison
// decide for all readers. Only a candidate refused is read at each
// reader's spec, to say which readers lose what. Safe for concurrent use.
type Judge struct {
	readers  []Reader // one per spec, the original's own among them
	declared Version
	orig     any         // the original as v3_d.Parse reads it
	valid    *ValidItems // see Validating
}

// Validating has the judge read candidates through v, which other judges
// and encoders may share (see readValid): a candidate repeats most files
// and units of the ones before it. Call it before Losses.
func (j *Judge) Validating(v *ValidItems) *Judge {
	j.valid = v
	return j
}

// NewJudge reads orig, a spec-3 config, for readers and for Ignition at
// the spec orig declares. It fails when orig does not parse by Ignition's
// own parser of that spec.
func NewJudge(orig []byte, readers []Reader) (*Judge, error) {
	decl, err := declaredVersion(orig)
	if err != nil {
		return nil, fmt.Errorf("Ignition's own parser refuses it: %w", err)
	}
	c, err := readAs(orig, decl)
	if err != nil {
		return nil, fmt.Errorf("Ignition's own parser of spec %s refuses it: %w", decl, err)
	}
	return newJudge(decl, c, readers), nil
}

// Judge is NewJudge of the config p was parsed from, without parsing it
// again: Parse read a spec-3 config with Ignition's own parser of its spec,
// which is what a reader of that spec reads. It fails for a config that is
// not spec 3.
func (p *Parsed) Judge(readers []Reader) (*Judge, error) {
	if p.declared == nil {
		return nil, fmt.Errorf("spec %s: only spec-3 configs are judged by Ignition's readers", p.Version)
	}
	return newJudge(p.Version, p.declared, readers), nil
}

// newJudge is a Judge of an original of spec decl, as v3_decl.Parse reads
// it, for readers and for Ignition at decl.
func newJudge(decl Version, orig any, readers []Reader) *Judge {
	j := &Judge{declared: decl, orig: orig}
	// Readers of one spec read alike: the first names them.
	for _, r := range append(slices.Clip(readers), Reader{Spec: decl, Who: fmt.Sprintf("Ignition at spec %s (the spec the config is written at)", decl)}) {
		if _, ok := ignitionReaders[r.Spec]; ok && !slices.ContainsFunc(j.readers, func(o Reader) bool { return o.Spec == r.Spec }) {
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
	s, err := declaredVersion(stored)
	if err == nil && !j.declared.Less(s) {
		// Through ValidItems, the validation runs beside the comparison:
		// both must hold, and a review's time is the sum of its steps.
		if c, ok := decodeValid(stored, s, j.valid); ok {
			passed := beside(func() bool { return j.valid.Passes(c) })
			same := j.readsAlike(j.valid.stepUpItems(c, s, j.declared), s)
			if passed() && same {
				return nil
			}
		}
	}
	var got any
	if err == nil {
		got, err = readAs(stored, s)
	}
	if err == nil && j.declared.Less(s) {
		err = fmt.Errorf("spec %s is newer than the original's %s", s, j.declared)
	}
	var out []Loss
	if err != nil {
		for _, r := range j.readers {
			if !r.Spec.Less(s) {
				out = append(out, Loss{Reader: r, Stored: s, Problem: Problem{Message: "it does not parse: " + err.Error()}})
			}
		}
		return out
	}
	if j.readsAlike(stepUp(got, s, j.declared), s) {
		return nil
	}
	// Which readers lose what: those of the original's spec or newer.
	for _, r := range j.readers {
		if r.Spec.Less(j.declared) {
			continue
		}
		want, got := stepUp(j.orig, j.declared, r.Spec), stepUp(got, s, r.Spec)
		ps := diff(want, got)
		if len(ps) == 0 && masksOnTheWay(s, r.Spec) {
			r.Who += " " + maskingIgnitions
			ps = diff(want, maskedModes(got))
		}
		for _, p := range ps {
			out = append(out, Loss{Reader: r, Stored: s, Problem: p})
		}
	}
	return out
}

// readsAlike reports whether up, a candidate of spec s stepped up to the
// original's spec, is the original, and is it too as the Ignitions that
// mask special mode bits on the way read it.
func (j *Judge) readsAlike(up any, s Version) bool {
	if len(diff(j.orig, up)) != 0 {
		return false
	}
	if !masksOnTheWay(s, j.declared) {
		return true
	}
	// Masked, a reading with no special mode bit is itself: read alike.
	masked, changed := maskModes(up)
	return !changed || len(diff(j.orig, masked)) == 0
}

// maskingIgnitions names the Ignition releases whose step from spec 3.3 to
// 3.4 masks the special mode bits (setuid, setgid, sticky) of files and
// directories: v2.15.0 to v2.20.0 (read in their config/v3_4/translate),
// which OpenShift 4.14 to 4.22 vendor; from v2.24.0 only the step to 3.6
// masks them. A reader of spec 3.4 or 3.5 may be either, so a candidate
// below 3.4 must be read alike both ways.
const maskingIgnitions = "(with Ignition v2.15.0 to v2.20.0, which mask special mode bits translating 3.3 to 3.4)"

// masksOnTheWay reports whether a reader of spec to, reading a config of
// spec from, may mask special mode bits on the way (see maskingIgnitions).
func masksOnTheWay(from, to Version) bool {
	return from.Less(V3_4) && !to.Less(V3_4) && to.Less(V3_6)
}

// maskedModes is a reading of spec 3.4 or 3.5 with the special mode bits
// of its files and directories masked, as maskingIgnitions read it; any
// other reading is returned as it is.
func maskedModes(c any) any {
	c, _ = maskModes(c)
	return c
}

// maskModes is maskedModes, and whether any mode had a bit masked.
func maskModes(c any) (any, bool) {
	var files, dirs bool
	switch c := c.(type) {
	case t34.Config:
		c.Storage.Files, files = masked(c.Storage.Files, func(f *t34.File) **int { return &f.Mode })
		c.Storage.Directories, dirs = masked(c.Storage.Directories, func(d *t34.Directory) **int { return &d.Mode })
		return c, files || dirs
	case t35.Config:
		c.Storage.Files, files = masked(c.Storage.Files, func(f *t35.File) **int { return &f.Mode })
		c.Storage.Directories, dirs = masked(c.Storage.Directories, func(d *t35.Directory) **int { return &d.Mode })
		return c, files || dirs
	}
	return c, false
}

// masked is list with the special mode bits of each entry's mode (found
// by mode) masked, a copy where one is (list is not changed), and whether
// one was.
func masked[T any](list []T, mode func(*T) **int) ([]T, bool) {
	out := list
	for i := range list {
		if m := mode(&list[i]); *m != nil && **m&0o7000 != 0 {
			if len(out) > 0 && &out[0] == &list[0] {
				out = slices.Clone(list)
			}
			v := **m &^ 0o7000
			*mode(&out[i]) = &v
		}
	}
	return out, len(out) > 0 && &out[0] != &list[0]
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

// LossReasons are the reasons a config needs spec v for what its readers
// lose below it: one a path lost, for its first loss (returned beside it),
// named as MinVersion named the field in reasons, else "the value a
// reader reads".
func LossReasons(lost []Loss, reasons []Reason, v Version) ([]Reason, []Loss) {
	var out []Reason
	var from []Loss
	seen := map[string]bool{}
	for _, l := range lost {
		k := l.Path.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		what := "the value a reader reads"
		for _, r := range reasons {
			if r.Path.String() == k {
				what = r.What
			}
		}
		out = append(out, Reason{Path: l.Path, What: what, Version: v})
		from = append(from, l)
	}
	return out, from
}

// stepUpItems is stepUp(c, from, to) with what Ignition's steps make of
// each of c's files and units, and of the rest of c, kept by content in v
// for the next config (a rendered config repeats most items of the one
// before): only what v does not know is stepped up, together. Ignition's
// steps are type-directed: a list is translated element by element and no
// step reads across elements (config/v3_N/translate: custom translators of
// single types, and 3.2's of Storage translating each list element by
// element), so a config steps up as its files and units do, beside the
// rest; TestStepUpItemsIsStepUp holds that for every fixture at every
// spec. A nil v is stepUp.
func (v *ValidItems) stepUpItems(c any, from, to Version) any {
	cv := reflect.ValueOf(c)
	if v == nil || !from.Less(to) || cv.Kind() != reflect.Struct {
		return stepUp(c, from, to)
	}
	t := cv.Type()
	rest := reflect.New(t).Elem()
	rest.Set(cv)
	var items []stepped // the rest first, then each file and unit
	for _, l := range steppedLists {
		list := cv.FieldByName(l[0]).FieldByName(l[1])
		if list.Len() == 0 {
			continue // kept in the rest: an empty list steps up as it is
		}
		rest.FieldByName(l[0]).FieldByName(l[1]).SetZero()
		for i := range list.Len() {
			items = append(items, stepped{list: l, value: list.Index(i)})
		}
	}
	items = append([]stepped{{value: rest}}, items...)
	// What v does not know goes into one config, stepped up at once.
	batch := reflect.New(t).Elem()
	var missed []int
	for i := range items {
		it := &items[i]
		js, err := json.Marshal(it.value.Interface())
		if err != nil {
			return stepUp(c, from, to)
		}
		it.key, it.keep = stepKey(t, it.list, js, from, to), len(js) <= maxKeptStep
		if it.keep {
			if it.up, it.known = v.stepKnown(it.key); it.known {
				continue
			}
		}
		missed = append(missed, i)
		if i == 0 {
			batch.Set(rest)
			continue
		}
		f := batch.FieldByName(it.list[0]).FieldByName(it.list[1])
		f.Set(reflect.Append(f, it.value))
	}
	if len(missed) > 0 {
		up := reflect.ValueOf(stepUp(batch.Interface(), from, to))
		n := map[[2]string]int{}
		for _, i := range missed {
			it := &items[i]
			if i == 0 {
				it.up = reflect.New(up.Type()).Elem()
				it.up.Set(up)
				for _, l := range steppedLists {
					if cv.FieldByName(l[0]).FieldByName(l[1]).Len() > 0 {
						it.up.FieldByName(l[0]).FieldByName(l[1]).SetZero()
					}
				}
			} else {
				it.up = up.FieldByName(it.list[0]).FieldByName(it.list[1]).Index(n[it.list])
				n[it.list]++
			}
			if it.keep {
				v.keepStep(it.key, it.up)
			}
		}
	}
	out := reflect.New(items[0].up.Type()).Elem()
	out.Set(items[0].up)
	for _, it := range items[1:] {
		f := out.FieldByName(it.list[0]).FieldByName(it.list[1])
		f.Set(reflect.Append(f, it.up))
	}
	return out.Interface()
}

// maxKeptStep bounds the JSON of an item (or of the rest of a config) whose
// step up a ValidItems keeps: the step up holds the item's contents, and
// a held config's items are a few hundred bytes (their data URLs tokens);
// a larger one (contents Hold left in place) is stepped up each time.
const maxKeptStep = 4 << 10

// steppedLists are the lists stepUpItems steps up an item at a time.
var steppedLists = [][2]string{{"Storage", "Files"}, {"Systemd", "Units"}}

// stepped is one part of a config stepUpItems steps up: the rest of it
// (list zero) or an item of list.
type stepped struct {
	list  [2]string
	value reflect.Value
	key   itemKey
	up    reflect.Value
	known bool
	keep  bool // small enough to keep (see maxKeptStep)
}

// stepKey keys a part of a config of type t (an item of list, or the rest)
// by its JSON as it is (tokens included: a step up keeps them, and Hold's
// are the same from one config to the next) and the two specs.
func stepKey(t reflect.Type, list [2]string, js []byte, from, to Version) itemKey {
	h := sha256.New()
	h.Write([]byte(from.String() + ">" + to.String() + " " + t.PkgPath() + " " + list[1] + "\x00"))
	h.Write(js)
	return itemKey(h.Sum(nil))
}

func (v *ValidItems) stepKnown(k itemKey) (reflect.Value, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	up, ok := v.steps[k]
	return up, ok
}

func (v *ValidItems) keepStep(k itemKey, up reflect.Value) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.steps == nil {
		v.steps = map[itemKey]reflect.Value{}
	}
	v.steps[k] = up
}
