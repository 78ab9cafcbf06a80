package admit

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	t35 "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/ignition-mcs/mcs/convert"
)

// tangAdvertisement is a 3.5.0 config whose LUKS volume binds to a Tang
// server offline: by its advertisement, which 3.4 has.
const tangAdvertisement = `{"ignition":{"version":"3.5.0"},"storage":{"luks":[{"name":"data","device":"/dev/vdb","clevis":{"tang":[{"url":"http://tang.example","thumbprint":"abc","advertisement":"{\"payload\":\"eyJrZXlzIjpbXX0\",\"protected\":\"eyJhbGciOiJFUzUxMiJ9\",\"signature\":\"c2ln\"}"}]}}]}}`

// setuidFile is a 3.5.0 file whose mode has the setuid bit: 2541 is 0o4755.
const setuidFile = `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/usr/local/bin/x","mode":2541,"contents":{"source":"data:,x"}}]}}`

// readV35 is raw as OpenShift's operator at main reads it: Ignition's own
// v3_5.ParseCompatibleVersion.
func readV35(t *testing.T, raw []byte) any {
	t.Helper()
	c, _, err := t35.ParseCompatibleVersion(raw)
	if err != nil {
		t.Fatalf("Ignition's v3_5.ParseCompatibleVersion: %v\n%s", err, raw)
	}
	return c
}

// TestLowerTangAdvertisementRegression: a 3.5.0 config with a Tang
// advertisement was stored at 3.4.0, which Ignition v2.27.0's
// v3_5.ParseCompatibleVersion reads with advertisement=nil. It is now
// stored as written, above a 3.4.0 ceiling, with a warning naming the
// field and the reader that loses it.
func TestLowerTangAdvertisementRegression(t *testing.T) {
	for _, c := range []struct {
		name    string
		ceiling convert.Version
		reads   convert.Version
		above   bool
	}{
		{name: "rollback reads 3.4.0", ceiling: convert.V3_4, reads: convert.V3_5, above: true},
		{name: "no ceiling", reads: convert.V3_5},
		{name: "operator not known", ceiling: convert.V3_4, above: true},
		{name: "rollback reads 3.5.0", ceiling: convert.V3_5, reads: convert.V3_5},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := lower(context.Background(), []byte(tangAdvertisement), c.ceiling, c.reads, nil)
			var pe *PassError
			if !errors.As(err, &pe) || pe.Kind != PassUnprovable || !strings.Contains(err.Error(), "$.storage.luks.0.clevis.tang.0.advertisement") {
				t.Fatalf("err %v, want an unprovable PassError naming the advertisement", err)
			}
			if res.Changed() || string(res.Config) != tangAdvertisement {
				t.Fatalf("stored at %s, want as written", res.Stored)
			}
			if got := readV35(t, res.Config); !reflect.DeepEqual(got, readV35(t, []byte(tangAdvertisement))) {
				t.Errorf("the 3.5 reader reads the stored config otherwise")
			}
			var above []string
			for _, r := range res.Above {
				above = append(above, r.Path.String()+" "+r.What+" "+r.Version.String())
			}
			want := []string(nil)
			if c.above {
				want = []string{"$.storage.luks.0.clevis.tang.0.advertisement Tang advertisements 3.5.0"}
				if len(res.Lost) == 0 || res.Lost[0].Reader.Spec != convert.V3_5 || res.Lost[0].Stored != convert.V3_4 {
					t.Errorf("lost %v, want the 3.5 reader's loss at 3.4.0", res.Lost)
				}
			}
			if !reflect.DeepEqual(above, want) {
				t.Errorf("above %q, want %q", above, want)
			}
		})
	}
}

// TestLowerSetuidFileRegression: a 3.5.0 file with mode 2541 (setuid
// 0755) was stored with mode 493, without a word: the bit was gone for the
// v3_5 reader that read the original. The mode is never rewritten, and the
// spec is the lowest every reader of 3.5 reads it at as written: 3.4.0, as
// Ignition v2.15.0 to v2.20.0 (OpenShift 4.14 to 4.22) mask the bits in
// their step from 3.3 to 3.4, so from 3.3.0 or below they would read 493.
func TestLowerSetuidFileRegression(t *testing.T) {
	for _, ceiling := range []convert.Version{{}, convert.V3_2, convert.V3_4, convert.V3_5} {
		t.Run("ceiling "+specOrNone(ceiling), func(t *testing.T) {
			res, _ := lower(context.Background(), []byte(setuidFile), ceiling, convert.V3_5, nil)
			if got, want := readV35(t, res.Config), readV35(t, []byte(setuidFile)); !reflect.DeepEqual(got, want) {
				t.Fatalf("stored at %s, the 3.5 reader reads it otherwise:\n%s", res.Stored, res.Config)
			}
			if res.Stored != convert.V3_4 {
				t.Errorf("stored at %s, want 3.4.0 with the mode as written", res.Stored)
			}
			if !strings.Contains(string(res.Config), `"mode":2541`) {
				t.Errorf("the mode was rewritten: %s", res.Config)
			}
			above := ceiling == convert.V3_2
			if got := len(res.Lost) > 0 && len(res.Above) == 1 && res.Above[0].Path.String() == "$.storage.files.0.mode"; got != above {
				t.Errorf("above the ceiling for a reader's loss: %v (%v, %v), want %v", got, res.Above, res.Lost, above)
			}
		})
	}
}

// TestAboveCeilingTangReview: through the webhook, the Tang config is
// stored as sent, warned about as above the ceiling (the field, the reader
// that loses it, what to do), and refused to a person with deny.
func TestAboveCeilingTangReview(t *testing.T) {
	for _, deny := range []bool{false, true} {
		t.Run(map[bool]string{false: "warn", true: "deny"}[deny], func(t *testing.T) {
			w := New(Config{Deny: deny, Registry: prometheus.NewRegistry()})
			w.SetCeiling(Ceiling{Spec: convert.V3_4, Reads: convert.V3_5, Reader: "OpenShift 4.18.7 (the release a rollback returns to)", Source: "test"})
			_, resp := post(t, w, reviewBody(admissionv1.Create, "alice", mcObject("99-tang", tangAdvertisement), nil))
			if resp.Patch != nil {
				t.Fatalf("patched: %s", resp.Patch)
			}
			all := strings.Join(resp.Warnings, "\n")
			for _, want := range []string{
				"$.spec.config.storage.luks.0.clevis.tang.0.advertisement: Tang advertisements: kept at Ignition spec 3.5.0, above the ceiling 3.4.0",
				"stored at 3.4.0, the cluster's machine-config-operator would read it otherwise (lost a",
				"drop or change the field",
			} {
				if !strings.Contains(all, want) {
					t.Errorf("warnings %q\nwant %q", resp.Warnings, want)
				}
			}
			outcome := PassUnprovable
			if deny {
				outcome = outcomeDenied
				if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "needs Ignition spec 3.5.0, above the ceiling 3.4.0") {
					t.Errorf("allowed %v, refusal %+v", resp.Allowed, resp.Result)
				}
			} else if !resp.Allowed {
				t.Errorf("refused: %+v", resp.Result)
			}
			if n := testutil.ToFloat64(w.metrics.reviews.WithLabelValues(outcome)); n != 1 {
				t.Errorf("reviews counted %v for outcome %s, want 1", n, outcome)
			}
		})
	}
}
