package apitest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	json2 "github.com/clarketm/json"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/releases"
)

// readerVersion is the Ignition release of the rollback reader: its
// config.Parse reads specs up to 3.4, as the release before a 3.5-writing
// OpenShift does.
const readerVersion = "v2.19.0"

// readerRelease is the newest OpenShift release the reader stands for: the
// last in the table whose operator reads up to 3.4.
func readerRelease(t *testing.T) string {
	var name string
	for _, r := range releases.Table {
		if r.Spec == convert.V3_4 {
			name = r.Release
		}
	}
	l, err := releases.Find(name)
	if err != nil || l.Row.Spec != convert.V3_4 {
		t.Fatalf("no release reading 3.4 in the table: %v", err)
	}
	return l.Version
}

// realdataObjects are a realdata set's MachineConfigs as OpenShift stores
// them (the generated 97-, 98-, 99-…-generated ones included) and its pools'
// rendered configs at 3.5.0, as OpenShift's render controller writes them.
func realdataObjects(t *testing.T, set string) []*unstructured.Unstructured {
	t.Helper()
	dir := shareddata.Path(t, "realdata", set)
	var out []*unstructured.Unstructured
	for _, o := range kubetest.DecodeDir(t, dir) {
		if o.GetKind() == "MachineConfig" {
			out = append(out, o)
		}
	}
	s := servetest.Load(t, dir)
	for _, pool := range []string{"master", "worker"} {
		_, b := servetest.OpenShiftRendered(t, s, pool)
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// ignitionCanonical is a config as Ignition itself reads it (its own
// parser and translation up to 3.5), written back without empty fields:
// two configs Ignition reads alike give the same bytes.
func ignitionCanonical(t *testing.T, raw []byte) []byte {
	t.Helper()
	c, rpt, err := v35.ParseCompatibleVersion(raw)
	if err != nil || rpt.IsFatal() {
		t.Fatalf("Ignition cannot read %.80s: %v %v", raw, err, rpt)
	}
	c.Ignition.Version = ""
	b, err := json2.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRealdataStoredLowest creates OpenShift's MachineConfigs (as it
// writes them: rendered and generated at 3.5.0) through the API server with
// the webhook: each is stored at the lowest spec, Ignition reads it as what
// was sent, and the rollback release's reader parses every one, where it
// refuses what was sent (as the API server stores it without the webhook).
func TestRealdataStoredLowest(t *testing.T) {
	s := setup(t)
	reader := testkit.RollbackReader(t, readerVersion)
	release := readerRelease(t)
	for _, set := range []string{"aws", "none"} {
		t.Run(set, func(t *testing.T) {
			t.Cleanup(func() { s.cp.DeleteAll(t, machineConfigs) })
			objs := realdataObjects(t, set)
			s.cp.Apply(t, objs...)
			sent, stored := map[string][]byte{}, map[string][]byte{}
			declared := map[string]convert.Version{}
			at35 := 0
			for _, o := range objs {
				name := o.GetName()
				want, err := admit.Lower(configOf(o), convert.Version{})
				var pe *admit.PassError
				if err != nil && !errors.As(err, &pe) {
					t.Fatal(err)
				}
				if pe != nil && (pe.Kind == admit.PassUnprovable || pe.Kind == admit.PassInvalid || pe.Kind == admit.PassRefused) {
					t.Errorf("%s: OpenShift's own config is not lowered: %v", name, err)
				}
				if want.Declared.IsZero() {
					continue // no config: kernel arguments only
				}
				got := get(t, s.cp.Dynamic, name)
				sent[name], stored[name] = configOf(o), configOf(got)
				declared[name] = want.Declared
				if v := storedVersion(got); v != want.Stored.String() {
					t.Errorf("%s: stored at %s, want %s (sent %s)", name, v, want.Stored, want.Declared)
				}
				if !want.Changed() {
					continue
				}
				if !bytes.Equal(ignitionCanonical(t, sent[name]), ignitionCanonical(t, stored[name])) {
					t.Errorf("%s: Ignition reads the stored config otherwise than the one sent", name)
				}
				if want.Declared == convert.V3_5 {
					at35++
				}
			}
			if at35 < 8 {
				t.Fatalf("only %d configs sent at 3.5.0", at35)
			}
			for name, v := range testkit.ReaderVerdicts(t, reader, stored) {
				if v != "" {
					t.Errorf("%s: the %s reader (OpenShift %s) refuses the stored config: %s", name, readerVersion, release, v)
				}
			}
			refused := 0
			for name, v := range testkit.ReaderVerdicts(t, reader, sent) {
				if strings.Contains(v, "unsupported config version") {
					refused++
				} else if declared[name] == convert.V3_5 {
					t.Errorf("%s: the reader reads the 3.5.0 config sent: %q", name, v)
				}
			}
			if refused != at35 {
				t.Errorf("the reader refuses %d of the %d configs sent at 3.5.0", refused, at35)
			}
		})
	}
}

// TestWithoutWebhookRefused is the rollback rehearsed the other way: the
// webhook down, OpenShift's rendered config is stored at 3.5.0 as sent,
// and the rollback release's reader refuses it.
func TestWithoutWebhookRefused(t *testing.T) {
	s := setup(t)
	reader := testkit.RollbackReader(t, readerVersion)
	var rendered *unstructured.Unstructured
	for _, o := range realdataObjects(t, "none") {
		if strings.HasPrefix(o.GetName(), "rendered-worker-") {
			rendered = o
		}
	}
	s.down()
	defer s.up(t)
	rendered.SetName("rendered-worker-unadmitted")
	got, err := s.cp.Dynamic.Resource(machineConfigs).Create(context.Background(), rendered, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.cp.Dynamic.Resource(machineConfigs).Delete(context.Background(), got.GetName(), metav1.DeleteOptions{})
	})
	if v := storedVersion(got); v != "3.5.0" {
		t.Fatalf("stored at %s without the webhook", v)
	}
	v := testkit.ReaderVerdicts(t, reader, map[string][]byte{"stored": configOf(got)})["stored"]
	if !strings.Contains(v, "unsupported config version") {
		t.Errorf("the reader on a 3.5.0 config: %q, want unsupported config version", v)
	}
}

// get reads a MachineConfig, or ends the test.
func get(t *testing.T, d dynamic.Interface, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := d.Resource(machineConfigs).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}
