package render

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5"

	"github.com/ignition-mcs/mcs/convert"
)

// tang is a 3.5.0 config whose LUKS volume has a Tang advertisement, which
// Ignition's own step from 3.4 to 3.5 drops.
const tang = `{"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"data","device":"/dev/vdb","clevis":{"tang":[{"url":"http://tang.example","thumbprint":"abc","advertisement":"{}"}]}}]}}`

// A rendered config is written at the lowest spec OpenShift's own reader
// reads as the config: a Tang advertisement needs spec 3.4 by the spec
// table, but a reader of 3.5 reads a 3.4 config without it, so the pool is
// written at 3.5.0 and says why; with a ceiling or --spec of 3.4.0 it is
// above the ceiling, naming the field and the reader.
func TestRenderTangAdvertisementReaders(t *testing.T) {
	s := setOf(t, doc("50-tang", "worker", tang))
	r := mustRender(t, s, "worker", Options{})
	if r.Spec != convert.V3_5 || r.MinSpec != convert.V3_4 {
		t.Fatalf("written at %s (min %s), want 3.5.0 (min 3.4.0)", r.Spec, r.MinSpec)
	}
	want, _, err := v3_5.ParseCompatibleVersion([]byte(tang))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := v3_5.ParseCompatibleVersion(r.MachineConfig.Spec.Config)
	if err != nil || !reflect.DeepEqual(got.Storage.Luks, want.Storage.Luks) {
		t.Errorf("Ignition's v3_5 reads the rendered LUKS volumes otherwise (%v): %s", err, r.MachineConfig.Spec.Config)
	}
	var why []string
	for _, rs := range r.Reasons {
		if rs.Version == convert.V3_5 {
			why = append(why, rs.Path.String())
		}
	}
	if !reflect.DeepEqual(why, []string{"$.storage.luks.0.clevis.tang.0.advertisement"}) {
		t.Errorf("reasons for 3.5.0: %v", why)
	}
	for _, opts := range []Options{{MaxSpec: convert.V3_4}, {Spec: convert.V3_4}} {
		_, err := s.RenderPool("worker", opts)
		var ce *specCeilingError
		if !errors.As(err, &ce) || ce.Needs != convert.V3_5 || !strings.Contains(err.Error(), "Tang advertisements (OpenShift's machine-config-operator (of the newest release known) reads it otherwise at spec 3.4.0: lost") {
			t.Errorf("%+v: %v, want a ceiling error for the advertisement", opts, err)
		}
	}
}
