package render

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// upstreamCase is a pool as upstream's render controller sees it (RunBootstrap
// in machine-config-operator's pkg/controller/render at 7ff337a): want is the
// name it renders the pool at (its spec, 3.5.0), or empty when it refuses
// the pool, and mcs must refuse it at path with msg.
type upstreamCase struct {
	name string
	docs []string
	want string
	path string
	msg  string
}

// checkUpstream renders the worker pool at 3.5.0, upstream's spec.
func checkUpstream(t *testing.T, tc upstreamCase) *Result {
	t.Helper()
	s := setOf(t, tc.docs...)
	if tc.want == "" {
		errs := renderErrs(t, s, "worker", Options{Spec: convert.V3_5})
		for _, e := range errs {
			if e.Path.String() == tc.path && strings.Contains(e.Message, tc.msg) && strings.HasPrefix(e.Object, "MachineConfig/") && e.File != "" {
				return nil
			}
		}
		t.Fatalf("errors %v; want %q at %s", errs, tc.msg, tc.path)
	}
	r := mustRender(t, s, "worker", Options{Spec: convert.V3_5})
	if r.Name != tc.want {
		t.Errorf("rendered as %s, upstream as %s\n%s", r.Name, tc.want, r.MachineConfig.Spec.Config)
	}
	return r
}

// spec2 is a spec 2.2 config holding the given JSON members.
func spec2(members string) string {
	return `{"ignition":{"version":"2.2.0"},` + members + `}`
}

// Upstream folds a spec 2 config's repeated core users into the last one,
// with its SSH keys first, then the earlier entries' from the last to the
// first, then drops repeated keys (removeIgnDuplicateFilesUnitsUsers and
// dedupePasswdUserSSHKeys in pkg/controller/common/helpers.go); walking the
// files and units backwards leaves them by where they last appear, last
// first, and a unit's drop-ins the last entry's first.
func TestUpstreamSpec2Fold(t *testing.T) {
	keys := `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA1 a","ssh-ed25519 AAAA2 b"]},` +
		`{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA3 c"]},{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA2 b","ssh-ed25519 AAAA4 d"]}]}`
	cases := []upstreamCase{
		{name: "three core users", docs: []string{doc("50-legacy", "worker", spec2(keys))}, want: "rendered-worker-1c6f86134cb35abce9442cb49dc42b0d"},
		{name: "one core user with a repeated key", docs: []string{doc("50-legacy", "worker",
			spec2(`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA1 a","ssh-ed25519 AAAA2 b","ssh-ed25519 AAAA1 a"]}]}`))}, want: "rendered-worker-0d0ed6a652f7b5697301a01943e92df9"},
		{name: "core users over a spec 3 base", docs: []string{
			doc("00-base", "worker", `{"ignition":{"version":"3.2.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA0 base"]}]}}`),
			doc("50-legacy", "worker", spec2(keys))}, want: "rendered-worker-3e13d530e515caecbe2d7548e14749dd"},
		{name: "files and units by where they last appear", docs: []string{doc("50-legacy", "worker", spec2(`"storage":{"files":[`+
			`{"filesystem":"root","path":"/etc/a","mode":420,"contents":{"source":"data:,a"}},`+
			`{"filesystem":"root","path":"/etc/b","mode":420,"contents":{"source":"data:,b"}},`+
			`{"filesystem":"root","path":"/etc/a","mode":384,"contents":{"source":"data:,a2"}},`+
			`{"filesystem":"root","path":"/etc/c","mode":420,"contents":{"source":"data:,c"}}]},`+
			`"systemd":{"units":[{"name":"x.service","enabled":true,"contents":"[Unit]\n","dropins":[{"name":"1.conf","contents":"one"}]},`+
			`{"name":"y.service","mask":true},`+
			`{"name":"x.service","enabled":false,"contents":"[Unit]\nX=1\n","dropins":[{"name":"2.conf","contents":"two"},{"name":"3.conf","contents":"three"}]}]}`))},
			want: "rendered-worker-d2c2e70481a4dd9ec451105a29d0f3fa"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkUpstream(t, tc) })
	}
	t.Run("fixture spec2-input", func(t *testing.T) {
		s, err := Load(filepath.Join("..", "fixtures", "features", "spec2-input"))
		if err != nil {
			t.Fatal(err)
		}
		if r := mustRender(t, s, "worker", Options{Spec: convert.V3_5}); r.Name != "rendered-worker-3a10bd5b64b88eb154d5804e9f44aeb0" {
			t.Errorf("rendered as %s", r.Name)
		}
	})
}

// dirs is a config of spec v holding directories (JSON members of each).
func dirs(v string, entries ...string) string {
	return `{"ignition":{"version":"` + v + `"},"storage":{"directories":[{` + strings.Join(entries, "},{") + `}]}}`
}

// Upstream keeps a directory's special mode bits as written: it parses
// configs at 3.5, where they are read and ignored (Ignition warns), and
// refuses them on files only (validateIgn3FileModes in
// pkg/controller/common/helpers.go). Forcing spec 3.5.0 must write them.
func TestUpstreamDirectorySpecialBits(t *testing.T) {
	cases := []upstreamCase{
		{name: "sticky, spec 3.5", docs: []string{doc("50-tmp", "worker", dirs("3.5.0", `"path":"/var/scratch","mode":1023`))}, want: "rendered-worker-f79c486e249b4860bc59d20d47d95acc"},
		{name: "setgid, spec 3.2", docs: []string{doc("50-shared", "worker", dirs("3.2.0", `"path":"/srv/shared","mode":1533`))}, want: "rendered-worker-e4a962cba44a8de20ab2a4cbcdd489b2"},
		{name: "setgid, spec 2.2", docs: []string{doc("50-shared", "worker", spec2(`"storage":{"directories":[{"filesystem":"root","path":"/srv/shared","mode":1533}]}`))}, want: "rendered-worker-e4a962cba44a8de20ab2a4cbcdd489b2"},
		{name: "a later mode without the bits wins", docs: []string{
			doc("50-tmp", "worker", dirs("3.5.0", `"path":"/var/scratch","mode":1023`)),
			doc("60-tmp", "worker", dirs("3.5.0", `"path":"/var/scratch","mode":493`))}, want: "rendered-worker-c074f0c8746c5b3d7383ada48c597208"},
		{name: "a later entry without a mode keeps them", docs: []string{
			doc("50-tmp", "worker", dirs("3.5.0", `"path":"/var/scratch","mode":1023`)),
			doc("60-tmp", "worker", dirs("3.4.0", `"path":"/var/scratch","user":{"name":"core"}`))}, want: "rendered-worker-935ec9926d66c34a65fdef3b811720aa"},
		{name: "a later config's bits replace", docs: []string{
			doc("50-tmp", "worker", dirs("3.5.0", `"path":"/var/scratch","mode":1023`, `"path":"/var/a","mode":493`)),
			doc("60-tmp", "worker", dirs("3.1.0", `"path":"/var/scratch","mode":3071`, `"path":"/var/b","mode":1005`))}, want: "rendered-worker-0e8ae01405896afec3b665dde7e7f22b"},
		{name: "files may not have them", docs: []string{doc("50-bin", "worker", file("/usr/local/bin/x", "data:,x", `"mode":2541`))},
			path: "$.spec.config.storage.files.0.mode", msg: "bits above 0777"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkUpstream(t, tc) })
	}
}

// Which spec special bits on a directory need depends on the spec that
// wrote them: before 3.6 they are ignored, so they need nothing and are
// written as they were at every spec that ignores them, and without them at
// 3.6, which would apply them; a 3.6 config applies them, which only 3.6
// can say. But OpenShift 4.14 to 4.22's operator and daemon (Ignition
// v2.15.0 to v2.20.0) mask them translating 3.3 to 3.4: a 3.5 config's
// sticky directory is written at 3.4.0 at the lowest, where they read it as
// written, and says why.
func TestDirectorySpecialBitsSpec(t *testing.T) {
	cases := []struct {
		name     string
		ign      string
		opts     Options
		spec     convert.Version
		mode     string // as written in the rendered config
		min      convert.Version
		ceiling  bool
		reasonAt string
	}{
		{"3.5 config, lowest spec", dirs("3.5.0", `"path":"/var/scratch","mode":1023`), Options{}, convert.V3_4, `"mode":1023`, convert.V3_0, false, "$.storage.directories.0.mode"},
		{"3.5 config at 3.6.0", dirs("3.5.0", `"path":"/var/scratch","mode":1023`), Options{Spec: convert.V3_6}, convert.V3_6, `"mode":511`, convert.V3_0, false, ""},
		{"2.2 config at 2.2.0", spec2(`"storage":{"directories":[{"filesystem":"root","path":"/srv/shared","mode":1533}]}`), Options{Spec: convert.V2_2}, convert.V2_2, `"mode":1533`, convert.V3_0, false, ""},
		{"3.6 config, lowest spec", dirs("3.6.0", `"path":"/var/scratch","mode":1023`), Options{}, convert.V3_6, `"mode":1023`, convert.V3_6, false, "$.storage.directories.0.mode"},
		{"3.6 config at 3.5.0", dirs("3.6.0", `"path":"/var/scratch","mode":1023`), Options{Spec: convert.V3_5}, convert.Version{}, "", convert.V3_6, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := setOf(t, doc("50-tmp", "worker", tc.ign))
			if tc.ceiling {
				var ce *specCeilingError
				if _, err := s.RenderPool("worker", tc.opts); !errors.As(err, &ce) || ce.Needs != tc.min {
					t.Fatalf("error %v, want a ceiling error needing %s", err, tc.min)
				}
				return
			}
			r := mustRender(t, s, "worker", tc.opts)
			if r.Spec != tc.spec || r.MinSpec != tc.min || !strings.Contains(string(r.MachineConfig.Spec.Config), tc.mode) {
				t.Errorf("spec %s (min %s): %s; want %s (min %s) with %s", r.Spec, r.MinSpec, r.MachineConfig.Spec.Config, tc.spec, tc.min, tc.mode)
			}
			if (tc.reasonAt == "") != (len(r.Reasons) == 0) || tc.reasonAt != "" && r.Reasons[0].Path.String() != tc.reasonAt {
				t.Errorf("reasons %+v, want one at %q", r.Reasons, tc.reasonAt)
			}
		})
	}
}

// notSkipped is a pool that selects every MachineConfig without the label
// example.com/skip: labelled or not.
const notSkipped = "kind: MachineConfigPool\nmetadata: {name: worker}\nspec: {machineConfigSelector: {matchExpressions: [{key: example.com/skip, operator: DoesNotExist}]}}\n"

// Upstream's MergeMachineConfigs refuses a selected MachineConfig whose
// labels are nil ("cannot find label in MachineConfig NAME"); an empty map
// is not nil.
func TestUpstreamUnlabelled(t *testing.T) {
	base := doc("00-worker", "worker", file("/etc/a", "data:,a"))
	bare := func(labels string) string {
		return "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 50-bare\n" + labels +
			"spec:\n  config: " + file("/etc/b", "data:,b") + "\n"
	}
	cases := []upstreamCase{
		{name: "no labels", docs: []string{notSkipped, base, bare("")}, path: "$.metadata.labels", msg: "cannot find label in MachineConfig 50-bare"},
		{name: "null labels", docs: []string{notSkipped, base, bare("  labels: null\n")}, path: "$.metadata.labels", msg: "has no labels"},
		{name: "empty labels", docs: []string{notSkipped, base, bare("  labels: {}\n")}, want: "rendered-worker-d9586ff3e86b22d87bf0d70c666546be"},
		{name: "other labels", docs: []string{notSkipped, base, bare("  labels: {example.com/team: a}\n")}, want: "rendered-worker-d9586ff3e86b22d87bf0d70c666546be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkUpstream(t, tc) })
	}
}

// Upstream's ValidateMachineConfig parses any config it is given, and {}
// has no version ("parsing Ignition config failed: invalid version"); only
// an absent or null config means none.
func TestUpstreamEmptyConfig(t *testing.T) {
	base := doc("00-worker", "worker", file("/etc/a", "data:,a"))
	cases := []upstreamCase{
		{name: "empty object", docs: []string{base, doc("50-kargs", "worker", "{}", "kernelArguments: [nosmt]")}, path: "$.spec.config", msg: "invalid version"},
		{name: "no version", docs: []string{base, doc("50-kargs", "worker", `{"storage":{}}`, "kernelArguments: [nosmt]")}, path: "$.spec.config.ignition.version", msg: "no ignition.version"},
		{name: "null", docs: []string{base, doc("50-kargs", "worker", "null", "kernelArguments: [nosmt]")}, want: "rendered-worker-4bf9e9af23dad88cf4cd3844a7c2ce86"},
		{name: "absent", docs: []string{base, doc("50-kargs", "worker", "", "kernelArguments: [nosmt]")}, want: "rendered-worker-4bf9e9af23dad88cf4cd3844a7c2ce86"},
		{name: "the first config absent", docs: []string{doc("00-kargs", "worker", "", "kernelArguments: [nosmt]"), doc("50-file", "worker", file("/etc/a", "data:,a"))}, want: "rendered-worker-4bf9e9af23dad88cf4cd3844a7c2ce86"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkUpstream(t, tc) })
	}
}

// Upstream supports only the core user in spec 2 configs
// (removeIgnDuplicateFilesUnitsUsers: "Only core user is supported"), and
// any user in spec 3 ones.
func TestUpstreamSpec2Users(t *testing.T) {
	cases := []upstreamCase{
		{name: "spec 2, another user", docs: []string{doc("50-users", "worker", spec2(`"passwd":{"users":[{"name":"admin","sshAuthorizedKeys":["ssh-ed25519 AAAA1 a"]}]}`))},
			path: "$.spec.config.passwd.users.0.name", msg: "Only core user is supported"},
		{name: "spec 2, core then another", docs: []string{doc("50-users", "worker", spec2(`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA1 a"]},{"name":"admin"}]}`))},
			path: "$.spec.config.passwd.users.1.name", msg: `user "admin" in a spec 2.2.0 config`},
		{name: "spec 2, core", docs: []string{doc("50-users", "worker", spec2(`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA1 a"]}]}`))}, want: "rendered-worker-7e81099415d69436bfdc9fb8f2bee3db"},
		{name: "spec 3, another user", docs: []string{doc("50-users", "worker", `{"ignition":{"version":"3.2.0"},"passwd":{"users":[{"name":"admin","sshAuthorizedKeys":["ssh-ed25519 AAAA1 a"]}]}}`)}, want: "rendered-worker-2e2861bef1b28716826d8601a2962a29"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkUpstream(t, tc) })
	}
}
