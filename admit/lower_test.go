package admit

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/render"
)

// realdataRendered is OpenShift's rendered config of a realdata pool as
// OpenShift writes it today: at spec 3.5.0.
func realdataRendered(tb testing.TB, set, pool string) *render.MachineConfig {
	tb.Helper()
	r, _ := servetest.OpenShiftRendered(tb, servetest.Load(tb, shareddata.Path(tb, "realdata", set)), pool)
	return r.MachineConfig
}

// sameConfig fails unless a and b parse to the same config.
func sameConfig(t *testing.T, a, b []byte) {
	t.Helper()
	pa, err := convert.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := convert.Parse(b)
	if err != nil {
		t.Fatalf("lowered config does not parse: %v", err)
	}
	if !equivalent(pa.Config, pb.Config) {
		t.Errorf("lowered config differs from the input")
	}
}

// equivalent compares two configs as the newest spec writes them (where an
// empty list and none are the same).
func equivalent(a, b convert.Config) bool {
	ja, err1 := convert.Marshal(a, false)
	jb, err2 := convert.Marshal(b, false)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func TestLower(t *testing.T) {
	kargs := `{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`
	setuid := `{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/usr/local/bin/x","mode":2541,"contents":{"source":"data:,x"}}]}}`
	// Valid at their own spec, not at the newer spec the operator reads.
	noTarget := `{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x"}]}}`
	noSource := `{"ignition":{"version":"3.0.0","config":{"merge":[{"verification":{}}]}}}`
	for _, c := range []struct {
		name          string
		in            string
		ceiling       convert.Version
		reads         convert.Version // the operator's spec; zero: not known
		stored, needs convert.Version
		above         []string // paths
		pass          string   // PassError kind
		why           string   // in the PassError's text
	}{
		{name: "files at 3.5.0", in: `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,hi"},"mode":420}]}}`, stored: convert.V3_0, needs: convert.V3_0},
		{name: "3.6.0 without its bits", in: `{"ignition":{"version":"3.6.0"},"systemd":{"units":[{"name":"a.service","enabled":true}]}}`, stored: convert.V3_0, needs: convert.V3_0},
		{name: "kernel arguments", in: kargs, stored: convert.V3_3, needs: convert.V3_3},
		{name: "kernel arguments above 3.2", in: kargs, ceiling: convert.V3_2, stored: convert.V3_3, needs: convert.V3_3, above: []string{"$.kernelArguments.shouldExist"}},
		{name: "kernel arguments within 3.4", in: kargs, ceiling: convert.V3_4, stored: convert.V3_3, needs: convert.V3_3},
		{name: "setuid needs 3.6", in: setuid, ceiling: convert.V3_5, stored: convert.V3_6, needs: convert.V3_6, above: []string{"$.storage.files.0.mode"}},
		{name: "already lowest", in: `{"ignition":{"version":"3.0.0"}}`, stored: convert.V3_0, needs: convert.V3_0},
		{name: "sha256 keeps 3.1", in: `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a","verification":{"hash":"sha256-ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}}}]}}`, stored: convert.V3_1, needs: convert.V3_1},
		{name: "spec 2", in: `{"ignition":{"version":"2.2.0"}}`, stored: convert.V2_2, pass: PassSpec2},
		{name: "unknown key", in: `{"ignition":{"version":"3.5.0"},"storge":{}}`, pass: PassInvalid},
		{name: "no version", in: `{"storage":{}}`, pass: PassInvalid},
		{name: "not an object", in: `["x"]`, pass: PassInvalid},
		{name: "bad JSON", in: `{"ignition":`, pass: PassInvalid},
		{name: "link without a target, operator reads 3.5.0", in: noTarget, ceiling: convert.V3_4, reads: convert.V3_5, pass: PassRefused,
			why: "the cluster's machine-config-operator reads spec 3.5.0 and refuses it: invalid spec 3.5.0 config: $.storage.links.0.target: valid in spec 3.2.0 but not in 3.5.0: link target is required"},
		{name: "link without a target, operator not known", in: noTarget, pass: PassRefused, why: "valid in spec 3.2.0 but not in 3.5.0"},
		{name: "link with its target, operator reads 3.5.0", in: `{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x","target":"/y"}]}}`, reads: convert.V3_5, stored: convert.V3_0, needs: convert.V3_0},
		{name: "merge without a source, operator reads 3.2.0", in: noSource, reads: convert.V3_2, pass: PassRefused, why: "valid in spec 3.0.0 but not in 3.2.0: source is required"},
		{name: "empty", in: ``},
		{name: "empty object", in: ` {} `},
		{name: "null", in: `null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := lower(context.Background(), []byte(c.in), c.ceiling, c.reads, nil)
			var pe *PassError
			if c.pass != "" {
				if !errors.As(err, &pe) || pe.Kind != c.pass || !strings.Contains(err.Error(), c.why) {
					t.Fatalf("err %v, want a %s PassError saying %q", err, c.pass, c.why)
				}
				if string(res.Config) != c.in || res.Changed() {
					t.Errorf("passed config changed: %s", res.Config)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Stored != c.stored || res.Needs != c.needs {
				t.Errorf("stored %s needs %s, want %s and %s", res.Stored, res.Needs, c.stored, c.needs)
			}
			var above []string
			for _, r := range res.Above {
				above = append(above, r.Path.String())
			}
			if !reflect.DeepEqual(above, c.above) {
				t.Errorf("above the ceiling: %v, want %v", above, c.above)
			}
			if !res.Changed() {
				if string(res.Config) != c.in {
					t.Errorf("unchanged, yet the bytes differ: %s", res.Config)
				}
				return
			}
			if !bytes.Contains(res.Config, []byte(`"version":"`+c.stored.String()+`"`)) {
				t.Errorf("stored bytes do not say %s: %s", c.stored, res.Config)
			}
			sameConfig(t, []byte(c.in), res.Config)
			again, err := lower(context.Background(), res.Config, c.ceiling, c.reads, nil)
			if err != nil || again.Changed() {
				t.Errorf("lowering the stored config again: changed %v, %v", again.Changed(), err)
			}
		})
	}
}

// TestLowerRealdata lowers OpenShift's rendered configs as it writes them
// (3.5.0): each to 3.0.0, the same config, and the same bytes every time,
// which is what keeps the render controller's re-apply a no-op.
func TestLowerRealdata(t *testing.T) {
	for _, set := range []string{"aws", "none"} {
		for _, pool := range []string{"master", "worker"} {
			t.Run(set+"/"+pool, func(t *testing.T) {
				mc := realdataRendered(t, set, pool)
				res, err := Lower(mc.Spec.Config, convert.V3_4)
				if err != nil {
					t.Fatal(err)
				}
				if res.Declared != convert.V3_5 || res.Stored != convert.V3_0 || len(res.Above) != 0 {
					t.Fatalf("%s → %s (above %v), want 3.5.0 → 3.0.0", res.Declared, res.Stored, res.Above)
				}
				sameConfig(t, mc.Spec.Config, res.Config)
				again, err := Lower(bytes.Clone(mc.Spec.Config), convert.V3_4)
				if err != nil || !bytes.Equal(again.Config, res.Config) {
					t.Errorf("a second lowering wrote other bytes (%v)", err)
				}
			})
		}
	}
}

func TestCandidates(t *testing.T) {
	got := candidates(convert.V3_0, convert.V3_0)
	if len(got) != 0 {
		t.Errorf("declared at its need: %v, want none", got)
	}
	got = candidates(convert.V3_3, convert.V3_6)
	want := []convert.Version{convert.V3_3, convert.V3_4, convert.V3_5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("3.3 to 3.6: %v, want %v", got, want)
	}
}

func FuzzLower(f *testing.F) {
	f.Add([]byte(`{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["a"]}}`))
	f.Add([]byte(`{"ignition":{"version":"3.6.0"},"storage":{"directories":[{"path":"/d","mode":1023}]}}`))
	f.Add([]byte(`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/a"}]}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := Lower(raw, convert.V3_2)
		if err != nil || !res.Changed() {
			if !bytes.Equal(res.Config, raw) {
				t.Fatalf("not lowered (%v), yet the bytes changed", err)
			}
			return
		}
		if !res.Stored.Less(res.Declared) || res.Stored.Less(res.Needs) {
			t.Fatalf("stored at %s: declared %s, needs %s", res.Stored, res.Declared, res.Needs)
		}
		in, _ := convert.Parse(raw)
		out, err := convert.Parse(res.Config)
		if err != nil {
			t.Fatalf("lowered config does not parse: %v", err)
		}
		if !equivalent(in.Config, out.Config) {
			t.Fatalf("lowered config differs")
		}
		checkLoweringPatches(t, raw, res)
	})
}
