package convert

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	v32tov31 "github.com/coreos/ign-converter/translate/v32tov31"
	v33tov32 "github.com/coreos/ign-converter/translate/v33tov32"
	v34tov33 "github.com/coreos/ign-converter/translate/v34tov33"
	v35tov34 "github.com/coreos/ign-converter/translate/v35tov34"
	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	up31 "github.com/coreos/ignition/v2/config/v3_1/translate"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	up32 "github.com/coreos/ignition/v2/config/v3_2/translate"
	t32 "github.com/coreos/ignition/v2/config/v3_2/types"
	up33 "github.com/coreos/ignition/v2/config/v3_3/translate"
	t33 "github.com/coreos/ignition/v2/config/v3_3/types"
	up34 "github.com/coreos/ignition/v2/config/v3_4/translate"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	up35 "github.com/coreos/ignition/v2/config/v3_5/translate"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	up36 "github.com/coreos/ignition/v2/config/v3_6/translate"
)

// fill sets every field reachable from v: pointers allocated, one element
// in every list, strings "x", booleans true, numbers 1.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Ptr:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i))
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	}
}

func filled[T any](version Version) any {
	var c T
	fill(reflect.ValueOf(&c).Elem())
	reflect.ValueOf(&c).Elem().FieldByName("Ignition").FieldByName("Version").SetString(version.String())
	return c
}

// filledConfigs are a config of every spec 3 version with every field set.
func filledConfigs() []struct {
	v Version
	c any
} {
	return []struct {
		v Version
		c any
	}{
		{V3_0, filled[t30.Config](V3_0)},
		{V3_1, filled[t31.Config](V3_1)},
		{V3_2, filled[t32.Config](V3_2)},
		{V3_3, filled[t33.Config](V3_3)},
		{V3_4, filled[t34.Config](V3_4)},
		{V3_5, filled[t35.Config](V3_5)},
		{V3_6, filled[Config](V3_6)},
	}
}

// Every field of every spec survives the way up to the newest spec and the
// way back down. Ignition's own 3.4→3.5 step fails this (it drops tang
// advertisements); upFrom repairs it, and this is the test that says so.
func TestStepsKeepEveryField(t *testing.T) {
	for _, tc := range filledConfigs() {
		t.Run(tc.v.String(), func(t *testing.T) {
			up, err := upFrom(tc.v, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			var cur any = up
			for _, s := range chain(tc.v) {
				if cur, err = s.down(cur); err != nil {
					t.Fatalf("%s→%s: %v", s.from, s.to, err)
				}
			}
			if d := diff(tc.c, cur); len(d) > 0 {
				t.Errorf("up to %s and back loses: %v", Newest, d)
			}
		})
	}
	t.Run("ignition's own 3.4→3.5 step", func(t *testing.T) {
		c := filled[t34.Config](V3_4).(t34.Config)
		if got := up35.Translate(c).Storage.Luks[0].Clevis.Tang[0].Advertisement; got != nil {
			t.Fatal("Ignition's 3.4→3.5 step keeps tang advertisements now: remove up34to35's repair and this canary")
		}
		if got := up34to35(c).Storage.Luks[0].Clevis.Tang[0].Advertisement; got == nil || *got != "x" {
			t.Errorf("up34to35 lost the advertisement: %v", got)
		}
	})
}

// ignitionUp is Ignition's own chain of steps up from spec v.
func ignitionUp(v Version, c any) Config {
	for _, s := range []struct {
		from Version
		up   func(any) any
	}{
		{V3_0, func(c any) any { return up31.Translate(c.(t30.Config)) }},
		{V3_1, func(c any) any { return up32.Translate(c.(t31.Config)) }},
		{V3_2, func(c any) any { return up33.Translate(c.(t32.Config)) }},
		{V3_3, func(c any) any { return up34.Translate(c.(t33.Config)) }},
		{V3_4, func(c any) any { return up35.Translate(c.(t34.Config)) }},
		{V3_5, func(c any) any { return up36.Translate(c.(t35.Config)) }},
	} {
		if !s.from.Less(v) {
			c = s.up(c)
		}
	}
	return c.(Config)
}

// The steps up give what Ignition's give, with the one repair: tang
// advertisements survive 3.4→3.5.
func TestUpStepsMatchIgnition(t *testing.T) {
	const adv = ".clevis.tang.0.advertisement"
	check := func(t *testing.T, v Version, c any) {
		ours, err := upFrom(v, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diff(ours, ignitionUp(v, c)) {
			if v.Less(V3_5) && strings.HasSuffix(d.Path.String(), adv) {
				continue
			}
			t.Errorf("from %s: differs from Ignition's steps at %s", v, d)
		}
	}
	for _, tc := range filledConfigs() {
		t.Run("filled "+tc.v.String(), func(t *testing.T) { check(t, tc.v, tc.c) })
	}
	for _, fx := range fixtures(t) {
		p := mustParse(t, fx.name, fx.raw)
		min, _ := minVersion(&p.Config)
		for _, v := range OutputVersions[1 : len(OutputVersions)-1] {
			if v.Less(min) {
				continue
			}
			typed, err := translateTo(&p.Config, v)
			if err != nil {
				t.Fatalf("%s: %v", fx.name, err)
			}
			check(t, v, typed)
		}
	}
}

// The ign-converter steps this package replaced give the same result as
// its own steps, wherever ign-converter's steps are right.
func TestStepsMatchIgnConverter(t *testing.T) {
	converter := map[Version]func(any) (any, error){
		V3_4: func(c any) (any, error) { return v34tov33.Translate(c.(t34.Config)) },
		V3_3: func(c any) (any, error) { return v33tov32.Translate(c.(t33.Config)) },
		V3_2: func(c any) (any, error) { return v32tov31.Translate(c.(t32.Config)) },
	}
	for _, fx := range fixtures(t) {
		p := mustParse(t, fx.name, fx.raw)
		min, _ := minVersion(&p.Config)
		for _, s := range steps {
			conv, ok := converter[s.from]
			if !ok || s.to.Less(min) {
				continue
			}
			in, err := translateTo(&p.Config, s.from)
			if err != nil {
				t.Fatalf("%s: translateTo %s: %v", fx.name, s.from, err)
			}
			ours, _ := s.down(in)
			theirs, err := conv(in)
			if err != nil {
				t.Errorf("%s: ign-converter %s→%s: %v", fx.name, s.from, s.to, err)
				continue
			}
			if d := diff(theirs, ours); len(d) > 0 {
				t.Errorf("%s: %s→%s differs from ign-converter's: %v", fx.name, s.from, s.to, d)
			}
		}
	}
}

// ign-converter's v35tov34 drops luks.cex and tang.advertisement without an
// error. The lossless proof names the dropped paths, and translate's own
// 3.5→3.4 step keeps the advertisement (3.4 holds it) and refuses cex.
func TestIgnConverterV35toV34Defect(t *testing.T) {
	for _, tc := range []struct {
		fixture, lost string
		ours          func(t *testing.T, p *Parsed)
	}{
		{"tang-advertisement", "$.storage.luks.0.clevis.tang.0.advertisement", func(t *testing.T, p *Parsed) {
			typed, err := translateTo(&p.Config, V3_4)
			if err != nil {
				t.Fatalf("translate to 3.4.0: %v", err)
			}
			got := typed.(t34.Config).Storage.Luks[0].Clevis.Tang[0].Advertisement
			want := p.Config.Storage.Luks[0].Clevis.Tang[0].Advertisement
			if got == nil || *got != *want {
				t.Errorf("3.4.0 advertisement = %v, want %q", got, *want)
			}
		}},
		{"luks-cex", "$.storage.luks.0.cex.enabled", func(t *testing.T, p *Parsed) {
			_, err := translateTo(&p.Config, V3_4)
			var ce *CannotExpressError
			if !errors.As(err, &ce) || len(ce.Reasons) != 1 || ce.Reasons[0].Path.String() != "$.storage.luks.0.cex.enabled" {
				t.Errorf("translate to 3.4.0 = %v, want a CannotExpressError naming $.storage.luks.0.cex.enabled", err)
			}
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			p := parseFeature(t, tc.fixture)
			in, err := translateTo(&p.Config, V3_5)
			if err != nil {
				t.Fatal(err)
			}
			out, err := v35tov34.Translate(in.(t35.Config))
			if err != nil {
				t.Fatalf("ign-converter's v35tov34 refuses it now (%v): its defect is fixed: translate's own 3.5→3.4 step, the workaround, can give way to it (then remove this canary)", err)
			}
			cfg := p.Config
			cfg.Ignition.Version = Newest.String()
			err = proveLossless(cfg, out, V3_4)
			var le *lossError
			if !errors.As(err, &le) {
				t.Fatalf("proveLossless(v35tov34's output) = %v, want a lossError", err)
			}
			if len(le.Diffs) != 1 || le.Diffs[0].Path.String() != tc.lost {
				t.Errorf("lossError names %v, want exactly %s", le.Diffs, tc.lost)
			}
			tc.ours(t, p)
		})
	}
}

// A step that loses a field makes translate fail with a lossError naming the
// step and the path, here with ign-converter's v35tov34 put in the chain.
func TestTranslateCatchesLossyStep(t *testing.T) {
	saved := steps[1]
	t.Cleanup(func() { steps[1] = saved })
	steps[1] = step{V3_5, V3_4, "ign-converter", func(c any) (any, error) { return v35tov34.Translate(c.(t35.Config)) }}

	p := parseFeature(t, "tang-advertisement")
	for _, target := range []Version{V3_4} {
		_, err := translateTo(&p.Config, target)
		var le *lossError
		if !errors.As(err, &le) {
			t.Fatalf("translateTo %s = %v, want a lossError", target, err)
		}
		if le.Step != "3.5.0→3.4.0 by ign-converter" || le.Target != target {
			t.Errorf("lossError step %q target %s, want 3.5.0→3.4.0 by ign-converter, %s", le.Step, le.Target, target)
		}
		if len(le.Diffs) != 1 || le.Diffs[0].Path.String() != "$.storage.luks.0.clevis.tang.0.advertisement" {
			t.Errorf("lossError diffs %v", le.Diffs)
		}
	}
}
