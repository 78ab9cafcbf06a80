package render

import (
	"errors"
	"strings"
	"testing"
)

// A field a MachineConfig (or MachineConfigPool) does not have is an error at its line in a file
// a person wrote (a typo loses what it holds), and a warning naming it from
// an API server (a newer release's CRD may carry it), never a failed pool.
func TestUnknownFields(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      string // the problem's "line: object: path: start of message"
	}{
		{"spec typo", doc("50-a", "worker", "", "kernelArgs: [foo=bar]"), "in/00.yaml:8:3: MachineConfig/50-a: $.spec.kernelArgs: unknown field kernelArgs (did you mean kernelArguments?)"},
		{"metadata typo", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 50-a\n  label:\n    machineconfiguration.openshift.io/role: worker\n",
			"in/00.yaml:5:3: MachineConfig/50-a: $.metadata.label: unknown field label (did you mean labels?)"},
		{"top level", doc("50-a", "worker", "") + "spc: {}\n", "in/00.yaml:8:1: MachineConfig/50-a: $.spc: unknown field spc: a MachineConfig holds only"},
		{"pool spec typo", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: infra}\nspec:\n  machineConfigSelector: {matchLabels: {machineconfiguration.openshift.io/role: infra}}\n  pause: true\n",
			"in/00.yaml:6:3: MachineConfigPool/infra: $.spec.pause: unknown field pause (did you mean paused?): a MachineConfigPool's spec holds only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Loader
			l.Data("in/00.yaml", []byte(tc.doc))
			_, err := l.Set()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v\nwant a line starting %q", err, tc.want)
			}
			api := Loader{FromAPIServer: true}
			api.Data("kubernetes", []byte(tc.doc))
			s, err := api.Set()
			if err != nil {
				t.Fatalf("from the API server: %v", err)
			}
			var notices []string
			for _, n := range s.Notices() {
				notices = append(notices, n.Error())
			}
			_, path, _ := strings.Cut(tc.want, ": $.")
			path, _, _ = strings.Cut(path, ":")
			if !strings.Contains(strings.Join(notices, "\n"), "$."+path+": warning: field unknown to this release") {
				t.Errorf("notices lack a warning naming $.%s:\n%s", path, strings.Join(notices, "\n"))
			}
		})
	}
	// Kubernetes' own metadata and status are no typo.
	s := setOf(t, doc("50-a", "worker", "")+"status: {}\n", strings.Replace(doc("60-b", "worker", ""), "  name: 60-b\n", "  name: 60-b\n  uid: x\n  resourceVersion: \"1\"\n  creationTimestamp: null\n", 1))
	if len(s.MachineConfigs()) != 2 {
		t.Fatal("a MachineConfig with status or Kubernetes metadata was refused")
	}
}

// Two MachineConfigs writing one file, unit, dropin or user differently:
// the later in merge order wins, and the result says which replaced what.
func TestOverrides(t *testing.T) {
	unit := func(contents string) string {
		return `{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"a.service","contents":"` + contents + `","dropins":[{"name":"d.conf","contents":"` + contents + `"}]}]}}`
	}
	s := setOf(t,
		doc("50-a", "worker", file("/etc/dup.conf", "data:,a", `"mode":420`)),
		doc("60-b", "worker", file("/etc/dup.conf", "data:,b", `"mode":420`)),
		doc("70-c", "worker", file("/etc/same.conf", "data:,x")),
		doc("80-d", "worker", file("/etc/same.conf", "data:,x")),
		doc("81-u", "worker", unit("[Unit]")),
		doc("82-u", "worker", unit("[Service]")),
		doc("90-rt", "worker", "", "kernelType: realtime", "osImageURL: quay.io/a/os@sha256:1111111111111111111111111111111111111111111111111111111111111111"),
		doc("91-64k", "worker", "", "kernelType: 64k-pages"),
		doc("92-default", "worker", "", "kernelType: default"),
		doc("93-img", "worker", "", "osImageURL: quay.io/b/os@sha256:2222222222222222222222222222222222222222222222222222222222222222"),
	)
	r := mustRender(t, s, "worker", Options{})
	var got []string
	for _, o := range r.Overrides {
		got = append(got, o.String())
	}
	want := []string{
		"file /etc/dup.conf: contents of MachineConfig 50-a (in/00.yaml:8) replaced by 60-b (in/01.yaml:8), the later in merge order",
		"unit a.service: contents of MachineConfig 81-u (in/04.yaml:8) replaced by 82-u (in/05.yaml:8), the later in merge order",
		"dropin a.service/d.conf: contents of MachineConfig 81-u (in/04.yaml:8) replaced by 82-u (in/05.yaml:8), the later in merge order",
		"spec.kernelType: the value of MachineConfig 90-rt (in/06.yaml:8) replaced by 91-64k (in/07.yaml:8), the later in merge order",
		"spec.osImageURL: the value of MachineConfig 90-rt (in/06.yaml:9) replaced by 93-img (in/09.yaml:8), the later in merge order",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("overrides:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A kind or label a typo away from what render reads is an error in files
// (the MachineConfig would drop out of every pool without a word), and from
// an API server, where kinds are exact and a MachineConfig no pool selects
// is the cluster's own business, a notice saying what was likely meant.
func TestSelectionTypos(t *testing.T) {
	base := doc("50-base", "worker", "")
	for _, tc := range []struct {
		name, doc string
		want      string
	}{
		{"kind", strings.Replace(doc("51-a", "worker", ""), "kind: MachineConfig", "kind: MachineConfg", 1), "in/00.yaml:2:1: MachineConfg/51-a: $.kind: unknown kind MachineConfg (did you mean MachineConfig?)"},
		{"role value", doc("51-a", "wroker", ""), "in/00.yaml:6:5: MachineConfig/51-a: $.metadata.labels.machineconfiguration.openshift.io/role: label machineconfiguration.openshift.io/role: wroker (did you mean worker?)"},
		{"role key", strings.Replace(doc("51-a", "worker", ""), "openshift.io/role:", "openshift.io/rol:", 1), "label machineconfiguration.openshift.io/rol (did you mean machineconfiguration.openshift.io/role?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Loader
			l.Data("in/00.yaml", []byte(tc.doc))
			l.Data("in/01.yaml", []byte(base))
			_, err := l.Set()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
			if tc.name == "kind" {
				return // an API server serves no such kind
			}
			api := Loader{FromAPIServer: true}
			api.Data("kubernetes", []byte(tc.doc+"---\n"+base))
			s, err := api.Set()
			if err != nil {
				t.Fatalf("from the API server: %v", err)
			}
			_, typo, _ := strings.Cut(tc.want, ": label ")
			if len(s.Notices()) != 1 || !strings.Contains(s.Notices()[0].Error(), "notice: label "+typo) {
				t.Errorf("notices: %v", s.Notices())
			}
		})
	}
}
