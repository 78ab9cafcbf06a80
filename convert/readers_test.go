package convert

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestReadAsIsIgnitions(t *testing.T) {
	raw := []byte(`{"ignition":{"version":"3.4.0"},"storage":{"luks":[{"name":"d","device":"/dev/vdb","clevis":{"tang":[{"url":"http://t","thumbprint":"x","advertisement":"{}"}]}}]}}`)
	for _, c := range []struct {
		spec    Version
		adv     bool // the reading keeps the advertisement
		refused bool
	}{
		{spec: V3_3, refused: true}, // a 3.3 reader cannot read 3.4
		{spec: V3_4, adv: true},
		{spec: V3_5}, // Ignition's 3.4→3.5 step drops it
		{spec: V3_6},
	} {
		t.Run(c.spec.String(), func(t *testing.T) {
			got, err := readAs(raw, c.spec)
			if c.refused {
				if err == nil {
					t.Fatal("read")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			js, _ := Marshal(got, false)
			if strings.Contains(string(js), "advertisement") != c.adv {
				t.Errorf("advertisement kept %v, want %v: %s", !c.adv, c.adv, js)
			}
		})
	}
	if _, err := readAs(raw, V2_2); err == nil {
		t.Error("a spec-2 reader")
	}
}

// A reading at a config's own spec stepped up (what the Judge compares)
// is, for every fixture and each written at every spec it can be, what
// each reader's own ParseCompatibleVersion reads: the same value, or an
// error from both.
func TestStepUpIsParseCompatibleVersion(t *testing.T) {
	for _, f := range fixtures(t) {
		raws := [][]byte{f.raw}
		if p, err := Parse(f.raw); err == nil && p.Version.Major == 3 {
			for _, v := range OutputVersions {
				if out, err := NewEncoder(p.Config, false).Encode(v, nil); err == nil {
					raws = append(raws, out.JSON)
				}
			}
		}
		for _, raw := range raws {
			decl, err := declaredVersion(raw)
			if err != nil || decl.Major != 3 {
				continue
			}
			own, oerr := readAs(raw, decl)
			for _, v := range OutputVersions {
				if v.Less(decl) {
					continue
				}
				want, werr := readAs(raw, v)
				if (werr != nil) != (oerr != nil) || werr == nil && !reflect.DeepEqual(stepUp(own, decl, v), want) {
					t.Errorf("%s at %s read at %s: stepped up (%v) differs from ParseCompatibleVersion (%v)", f.name, decl, v, oerr, werr)
				}
			}
		}
	}
}

// TestStepUpItemsIsStepUp: a config stepped up a file and a unit at a
// time, items kept by content, is what Ignition's steps make of it whole:
// every fixture written at every spec, stepped up to every newer spec,
// twice through one ValidItems (the second time from what it kept).
func TestStepUpItemsIsStepUp(t *testing.T) {
	valid := &ValidItems{}
	items := 0
	for pass := range 2 {
		for _, f := range fixtures(t) {
			p, err := Parse(f.raw)
			if err != nil || p.Version.Major != 3 {
				continue
			}
			for _, s := range OutputVersions {
				out, err := NewEncoder(p.Config, false).Encode(s, nil)
				if err != nil || s.Major != 3 {
					continue
				}
				own, err := readAs(out.JSON, s)
				if err != nil {
					continue
				}
				for _, v := range OutputVersions {
					if !s.Less(v) {
						continue
					}
					if want, got := stepUp(own, s, v), valid.stepUpItems(own, s, v); !reflect.DeepEqual(want, got) {
						t.Errorf("%s at %s stepped up to %s (pass %d): by items differs from whole\n%v", f.name, s, v, pass, diff(want, got))
					}
				}
			}
		}
		if pass == 0 {
			items = len(valid.steps)
		}
	}
	if items < 100 || len(valid.steps) != items {
		t.Errorf("%d items kept after the first pass, %d after the second", items, len(valid.steps))
	}
}

// TestReadValidIsReadAs: reading a config through a ValidItems (decode,
// version, validation a file or unit at a time) gives what Ignition's own
// ParseCompatibleVersion gives, and fails where it fails: every fixture as
// written and encoded at every spec, read at its own spec, and configs
// each reader refuses for a problem within an item, across items, or of
// its JSON. One ValidItems serves all, as the reviews share one.
func TestReadValidIsReadAs(t *testing.T) {
	valid := &ValidItems{}
	raws := fixturesAtEverySpec(t)
	for _, v := range OutputVersions[1:] {
		for _, body := range []string{
			`"storage":{"files":[{"path":"/a"},{"path":"/a"}]}`,
			`"storage":{"files":[{"path":"/l/a"}],"links":[{"path":"/l","target":"/t"}]}`,
			`"storage":{"files":[{"path":"relative"}]}`,
			`"storage":{"files":[{"path":"/a","mode":99999}]}`,
			`"storage":{"files":[{"path":"/etc/systemd/system/a.service"}]},"systemd":{"units":[{"name":"a.service","contents":"[Unit]"}]}`,
			`"systemd":{"units":[{"name":"a.service"},{"name":"a.service"}]}`,
			`"systemd":{"units":[{"name":"a.service","contents":"[Unit"}]}`,
			`"systemd":{"units":[{"name":"a.bad"}]}`,
			`"storage":{"files":[{"path":"/a","contents":{"source":"data:%"}}]}`,
			`"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}}],"directories":[{"path":"/a"}]}`,
			`"storage":{"files":[{"path":"/a","contents":{"source":"data:,a","unknown":1}}]}`,
			`"storage":{"files":[{"path":"/a","mode":"420"}]}`,
			`"passwd":{"users":[{"name":"a"},{"name":"a"}]}`,
			`"storage":{"files":{"path":"/a"}}`,
		} {
			raws = append(raws, []byte(`{"ignition":{"version":"`+v.String()+`"},`+body+`}`))
		}
		raws = append(raws, []byte(`{"ignition":{"version":"`+v.String()+`-experimental"}}`), []byte(`{"ignition":{"version":"`+v.String()+`"}} x`))
	}
	refused := 0
	for _, raw := range raws {
		decl, err := declaredVersion(raw)
		if err != nil || decl.Major != 3 {
			continue
		}
		want, werr := readAs(raw, decl)
		got, gerr := readValid(raw, decl, valid)
		if werr != nil {
			refused++
		}
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s at %s: read through ValidItems (%v) differs from ParseCompatibleVersion (%v)", raw, decl, gerr, werr)
		}
	}
	t.Logf("%d configs read, %d refused", len(raws), refused)
	if refused < 6*10 {
		t.Errorf("only %d configs refused: the cases do not exercise the fallback", refused)
	}
}

// TestJudge: a candidate stands for the original when every reader reads
// both alike, a reader that cannot read the original parses it, and
// readers older than the candidate are not asked.
func TestJudge(t *testing.T) {
	orig := []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","mode":420,"contents":{"source":"data:,a"}}]}}`)
	readers := []Reader{{Spec: V3_5, Who: "current"}, {Spec: V3_4, Who: "rollback"}}
	j, err := NewJudge(orig, readers)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	jp, err := p.Judge(readers)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(j.orig, jp.orig) {
		t.Error("Parsed.Judge reads the original otherwise than NewJudge")
	}
	for _, c := range []struct {
		name, stored string
		who          []string // the readers that lose something
	}{
		{name: "same at 3.0", stored: `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/a","mode":420,"contents":{"source":"data:,a"}}]}}`},
		{name: "as written", stored: string(orig)},
		{name: "a mode changed", stored: `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/a","mode":384,"contents":{"source":"data:,a"}}]}}`, who: []string{"current"}},
		{name: "does not parse", stored: `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"a"}]}}`, who: []string{"current", "rollback"}},
		{name: "a file added", stored: `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a","mode":420,"contents":{"source":"data:,a"}},{"path":"/b"}]}}`, who: []string{"current"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var who []string
			for _, l := range jp.Losses([]byte(c.stored)) {
				who = append(who, l.Reader.Who)
			}
			if !reflect.DeepEqual(who, c.who) {
				t.Errorf("losses by %v, want %v", who, c.who)
			}
		})
	}
	if _, err := NewJudge([]byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"a"}]}}`), readers); err == nil {
		t.Error("judged an original Ignition refuses")
	}
}

// fixturesAtEverySpec is every fixture as written and, for those of spec
// 3, as encoded at every output spec that can express it.
func fixturesAtEverySpec(t *testing.T) [][]byte {
	var raws [][]byte
	for _, f := range fixtures(t) {
		raws = append(raws, f.raw)
		if p, err := Parse(f.raw); err == nil && p.Version.Major == 3 {
			for _, v := range OutputVersions {
				if out, err := NewEncoder(p.Config, false).Encode(v, nil); err == nil {
					raws = append(raws, out.JSON)
				}
			}
		}
	}
	return raws
}

// TestStepUpItemsKeepsSmallOnly: a file whose contents Hold left in place
// (an escape) is stepped up each time, not kept: what a ValidItems keeps
// is bounded by its count (see maxKeptStep).
func TestStepUpItemsKeepsSmallOnly(t *testing.T) {
	big := `data:,\u0061` + strings.Repeat("b", 64<<10)
	orig := []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/big","contents":{"source":"` + big + `"}},{"path":"/small","contents":{"source":"data:,s"}}]}}`)
	j, err := NewJudge(orig, []Reader{{Spec: V3_4, Who: "reader"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, err := NewEncoder(p.Config, false).Encode(V3_2, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := &ValidItems{}
	if l := j.Validating(v).Losses(out.JSON); len(l) != 0 {
		t.Fatalf("losses: %v", l)
	}
	if len(v.steps) != 2 { // the small file and the rest
		t.Fatalf("%d step-ups kept, want 2 (not the 64 KiB file)", len(v.steps))
	}
}
