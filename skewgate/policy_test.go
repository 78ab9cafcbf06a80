package skewgate

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

func TestParseRHCOS(t *testing.T) {
	testkit.Cases(t, "testdata/rhcos.txt", 3, func(t *testing.T, c []string) {
		in, release, build := c[0], c[1], c[2]
		got, err := parseRHCOS(in)
		if release == "error" {
			if err == nil {
				t.Fatalf("accepted %q as %+v", in, got)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if rel := fmt.Sprintf("%d.%d", got.RHELMajor, got.RHELMinor); rel != release || got.Build != build {
			t.Fatalf("got %+v, want RHEL %s build %q", got, release, build)
		}
	})
}

func TestRHCOSOrder(t *testing.T) {
	cases := []struct {
		a, b string
		less bool
	}{
		{"48.84.202208021106-0", "9.2", true},
		{"9.2.20240101-0", "9.2", false}, // a limit without a build admits every build of that RHEL
		{"9.1.20991231-0", "9.2", true},
		{"9.6.20251023-0", "9.6.20251024-0", true},
		{"9.6.20251024-0", "9.6.20251023-0", false},
		{"10.0", "9.6", false},
		{"413.92.202305021736-0", "9.2", false},
	}
	for _, c := range cases {
		a, _ := parseRHCOS(c.a)
		b, _ := parseRHCOS(c.b)
		if got := a.Less(b); got != c.less {
			t.Errorf("%s < %s = %v, want %v", c.a, c.b, got, c.less)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	testkit.Cases(t, "testdata/policy.txt", 3, func(t *testing.T, c []string) {
		doc, want := c[1], c[2]
		_, err := ParsePolicy([]byte(doc))
		switch {
		case want == "" && err != nil:
			t.Fatal(err)
		case want != "" && err == nil:
			t.Fatalf("accepted; want error with %q", want)
		case want != "" && !strings.Contains(err.Error(), want):
			t.Fatalf("error %q lacks %q", err, want)
		}
	})
}

func mustPolicy(t *testing.T, doc string) *Policy {
	t.Helper()
	p, err := ParsePolicy([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecide(t *testing.T) {
	servable := Request{Pool: "worker", UserAgent: "Ignition/v2.27.0", ClientSpec: convert.V3_6, Servable: true}
	unreadable := Request{Pool: "worker", UserAgent: "Ignition/v2.9.0", ClientSpec: convert.V3_2, NeededSpec: convert.V3_4,
		Fields: []convert.Reason{{Path: convert.NewPath("storage", "luks", 0, "discard"), What: "LUKS discard", Version: convert.V3_4}}}
	oldClient := servable
	oldClient.UserAgent, oldClient.ClientSpec = "Ignition/v2.14.0", convert.V3_3
	cases := []struct {
		name, policy string
		req          Request
		admit        bool
		reason       string
		msg          []string
	}{
		{"no policy admits", "", servable, true, reasonOK, nil},
		{"no policy, unreadable", "", unreadable, false, ReasonSpecUnreadable,
			[]string{`pool "worker"`, "v2.9.0", "3.2.0", "3.4.0", "$.storage.luks.0.discard", "v2.15.0 or newer", "Reference: mcs-skew-"}},
		{"mode None still stubs the unreadable", "mode: None", unreadable, false, ReasonSpecUnreadable, nil},
		{"mode None admits", "mode: None", servable, true, reasonEnforcementOff, nil},
		{"automatic admits", "mode: Automatic", servable, true, reasonAutomaticManage, nil},
		{"ocp older than limit", "mode: Manual\nmanual: {mode: OCPVersion, ocpVersion: 4.12.9}", servable, false, reasonBootImageOld,
			[]string{"OpenShift 4.12.9", "older than 4.13.0"}},
		{"ocp at limit", "mode: Manual\nmanual: {mode: OCPVersion, ocpVersion: 4.13.0}", servable, true, reasonOK, nil},
		{"ocp two-part", "mode: Manual\nmanual: {mode: OCPVersion, ocpVersion: '4.13'}", servable, true, reasonOK, nil},
		{"ocp custom limit", "mode: Manual\nmanual: {mode: OCPVersion, ocpVersion: 4.14.0}\nrelease: {ocpVersion: 4.16.0}", servable, false, reasonBootImageOld, []string{"4.16.0"}},
		{"rhcos legacy is old", "mode: Manual\nmanual: {mode: RHCOSVersion, rhcosVersion: 48.84.202208021106-0}", servable, false, reasonBootImageOld,
			[]string{"RHCOS 48.84.202208021106-0 (RHEL 8.4)", "older than RHCOS 9.2"}},
		{"rhcos new is fine", "mode: Manual\nmanual: {mode: RHCOSVersion, rhcosVersion: 9.6.20251023-0}", servable, true, reasonOK, nil},
		{"rhcos at limit", "mode: Manual\nmanual: {mode: RHCOSVersion, rhcosVersion: 9.2.20230101-0}", servable, true, reasonOK, nil},
		{"min ignition refuses", "minIgnitionVersion: {worker: 2.15.0}", oldClient, false, reasonIgnitionOld, []string{"v2.14.0 is older than v2.15.0"}},
		{"min ignition other pool", "minIgnitionVersion: {infra: 2.15.0}", oldClient, true, reasonOK, nil},
		{"min ignition wildcard", "minIgnitionVersion: {'*': 2.15.0}", oldClient, false, reasonIgnitionOld, nil},
		{"min ignition edge", "minIgnitionVersion: {worker: 2.14.0}", oldClient, true, reasonOK, nil},
		{"min ignition unknown agent admitted", "minIgnitionVersion: {worker: 2.15.0}", Request{Pool: "worker", UserAgent: "curl/8", Servable: true}, true, reasonOK, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p *Policy
			if c.policy != "" {
				p = mustPolicy(t, c.policy)
			}
			d := New(p, nil).Decide(c.req)
			if d.Admit != c.admit || d.Reason != c.reason {
				t.Fatalf("got admit=%v reason=%s, want %v %s\n%s", d.Admit, d.Reason, c.admit, c.reason, d.Message)
			}
			if !d.Admit && !strings.Contains(d.Message, d.ID) {
				t.Fatalf("message lacks its id %s", d.ID)
			}
			for _, m := range c.msg {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message lacks %q:\n%s", m, d.Message)
				}
			}
		})
	}
}

func TestReleasesTable(t *testing.T) {
	cases := map[string]string{
		"Ignition/v0.35.0": "2.2.0",
		"Ignition/v2.0.0":  "3.0.0",
		"Ignition/v2.2.0":  "3.0.0",
		"Ignition/v2.3.0":  "3.1.0",
		"Ignition/v2.6.9":  "3.1.0",
		"Ignition/v2.7.0":  "3.2.0",
		"Ignition/v2.10.0": "3.2.0",
		"Ignition/v2.11.0": "3.3.0",
		"Ignition/v2.14.0": "3.3.0",
		"Ignition/v2.15.0": "3.4.0",
		"Ignition/v2.19.0": "3.4.0",
		"Ignition/v2.20.0": "3.5.0",
		"Ignition/v2.24.0": "3.5.0",
		"Ignition/v2.25.9": "3.5.0",
		"Ignition/v2.26.0": "3.6.0",
		"Ignition/v2.27.0": "3.6.0",
	}
	for ua, want := range cases {
		v, ok := ParseUserAgent(ua)
		if !ok {
			t.Fatalf("cannot parse %q", ua)
		}
		if got := SpecFor(v).String(); got != want {
			t.Errorf("%s reads %s, want %s", ua, got, want)
		}
	}
	// The table covers every spec we write, and its first readers read them.
	for _, s := range convert.OutputVersions {
		first, ok := firstReader(s)
		if !ok {
			t.Errorf("no release listed for spec %s", s)
			continue
		}
		if SpecFor(first) != s {
			t.Errorf("first reader %s of %s reads %s", first, s, SpecFor(first))
		}
	}
	for _, ua := range []string{"Ignition/was not built properly", "Ignition/v2.27", "Ignition/v2.27.0x", "Ignition/v99999999999.0.0"} {
		if v, ok := ParseUserAgent(ua); ok {
			t.Errorf("%q read as %s", ua, v)
		}
	}
}

func TestStubConfig(t *testing.T) {
	g := New(nil, nil)
	d := g.Decide(Request{Pool: "infra/../x", ClientSpec: convert.V3_2, NeededSpec: convert.V3_4})
	for _, v := range convert.OutputVersions {
		body, err := g.Stub("infra/../x", d, v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		p, err := convert.Parse(body)
		if err != nil || p.Version != v {
			t.Fatalf("%s: stub parses as %v: %v", v, p, err)
		}
		files := p.Config.Storage.Files
		if len(files) != 1 || files[0].Path != "/etc/issue.d/mcs-cannot-join-infra_.._x.issue" || *files[0].Mode != 0o644 || !*files[0].Overwrite {
			t.Fatalf("%s: stub files %+v", v, files)
		}
		if len(p.Config.Systemd.Units) != 0 || len(p.Config.Passwd.Users) != 0 {
			t.Fatalf("%s: stub carries more than the issue file", v)
		}
	}
}

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"mode: None", "mode: Manual\nmanual: {mode: RHCOSVersion, rhcosVersion: 48.84.202208021106-0}",
		`{"spec":{"bootImageSkewEnforcement":{"mode":"Manual","manual":{"mode":"OCPVersion","ocpVersion":"4.12.0"}}}}`,
		"minIgnitionVersion: {worker: 2.15.0}", "release: {ocpVersion: 4.16.0, rhcosVersion: 9.4}", "- a\n- b", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePolicy(b)
		if err != nil {
			return
		}
		// Whatever parses must decide without panicking.
		g := New(p, nil)
		g.Decide(Request{Pool: "worker", UserAgent: "Ignition/v2.14.0", Servable: true, ClientSpec: convert.V3_3})
		g.Decide(Request{Pool: "worker", ClientSpec: convert.V3_2, NeededSpec: convert.V3_4})
	})
}

func FuzzParseRHCOS(f *testing.F) {
	for _, s := range []string{"9.6.20251023-0", "48.84.202208021106-0", "9.2", "413.92.202305021736-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseRHCOS(s)
		if err == nil && v.Less(v) {
			t.Fatalf("%q < itself", s)
		}
	})
}

// A cluster's MachineConfiguration without spec.bootImageSkewEnforcement
// sets no policy: the gate then blocks only clients that cannot read their
// config, as with no policy file at all.
func TestParsePolicyObjectWithoutPolicy(t *testing.T) {
	p := mustPolicy(t, "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata: {name: cluster}\nspec: {logLevel: Normal}\n")
	if p.Mode != "" || p.Manual != nil || p.Release != defaultRelease {
		t.Fatalf("policy = %+v, want none with the default release limits", p)
	}
}

// The MCO's status says which mode it chose when the spec names none; the
// spec, when set, is what the admin asked for and wins.
func TestParsePolicyObjectStatus(t *testing.T) {
	p := mustPolicy(t, "kind: MachineConfiguration\nspec: {}\nstatus:\n  bootImageSkewEnforcementStatus:\n    mode: Manual\n    manual: {mode: RHCOSVersion, rhcosVersion: 9.2.20240101-0}\n")
	if p.Mode != "Manual" || p.Manual == nil || p.Manual.RHCOSVersion != "9.2.20240101-0" {
		t.Errorf("from status: %+v", p)
	}
	p = mustPolicy(t, "kind: MachineConfiguration\nspec:\n  bootImageSkewEnforcement: {mode: None}\nstatus:\n  bootImageSkewEnforcementStatus: {mode: Automatic}\n")
	if p.Mode != "None" {
		t.Errorf("spec and status: mode %q, want the spec's None", p.Mode)
	}
}

// userAgentRE is ParseUserAgent's definition, as a regular expression: the
// reference its hand-written scan is fuzzed against.
var userAgentRE = regexp.MustCompile(`^Ignition/v(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?:$|[-+ ])`)

func FuzzParseUserAgent(f *testing.F) {
	for _, ua := range []string{"Ignition/v2.27.0", "Ignition/v2.14.0-3-gabc1234", "Ignition/v0.35.0", "Ignition/v2.27.0+dirty",
		"Ignition/v2.27.0 (x)", "Ignition/v2.27", "Ignition/v2.27.0x", "Ignition/v99999999999.0.0", "Ignition/v123456789.1.1",
		"Ignition/v1234567890.1.1", "Ignition/v2..0", "Ignition/v.1.2", "ignition/v2.27.0", "Ignition/v2.27.0\n", "", "curl/8.0"} {
		f.Add(ua)
	}
	f.Fuzz(func(t *testing.T, ua string) {
		var want IgnitionVersion
		m := userAgentRE.FindStringSubmatch(ua)
		if m != nil {
			want.Major, _ = strconv.Atoi(m[1])
			want.Minor, _ = strconv.Atoi(m[2])
			want.Patch, _ = strconv.Atoi(m[3])
		}
		got, ok := ParseUserAgent(ua)
		if ok != (m != nil) || got != want {
			t.Errorf("ParseUserAgent(%q) = %v, %v; the definition reads %v, %v", ua, got, ok, want, m != nil)
		}
	})
}

func TestParseUserAgentAllocs(t *testing.T) {
	if n := testkit.Allocs(100, func() { ParseUserAgent("Ignition/v2.27.0") }); n != 0 {
		t.Errorf("ParseUserAgent allocates %v times", n)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files")

// A policy file's mistakes are told at their line and path, an unknown
// field by its own path with the field likely meant (not encoding/json's
// "$: json: unknown field" at the top whatever its depth);
// testdata/policy-files.txt holds each message.
func TestLoadPolicyErrorsAtLines(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	for i, doc := range []string{
		"mode: Manual\nbogusKey: 1\n",
		"mode: Manual\nmanual:\n  mode: OCPVersion\n  ocpversion: 4.12.0\n",
		"mode: Manual\nmanual: {mode: OCPVersion, ocpVersion: four}\n",
		"mode: None\nrelease:\n  rhcosVersion: x\n",
		"mode: None\nminIgnitionVersion:\n  worker: new\n",
		"mode: [1]\n",
		"kind: MachineConfiguration\nspec:\n  bootImageSkewEnforcement:\n    mode: Bogus\n",
		`{"mode": "None", "relase": {}}`,
	} {
		path := filepath.Join(dir, fmt.Sprintf("policy-%d.yaml", i))
		os.WriteFile(path, []byte(doc), 0o644)
		_, err := LoadPolicy(path)
		if err == nil {
			t.Fatalf("%q accepted", doc)
		}
		fmt.Fprintf(&out, "%s---\n%s\n\n", doc, strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
	}
	testkit.Golden(t, "testdata/policy-files.txt", out.String(), *update)
}

// The enforcement OpenShift computed (status.bootImageSkewEnforcementStatus)
// is kept beside the policy, read leniently; a bare policy has none.
func TestClusterStatus(t *testing.T) {
	for name, tc := range map[string]struct {
		doc  string
		mode string
		want *EnforcementStatus
	}{
		"spec and automatic status": {`{"kind":"MachineConfiguration","spec":{"bootImageSkewEnforcement":{"mode":"None"}},
			"status":{"bootImageSkewEnforcementStatus":{"mode":"Automatic","automatic":{"ocpVersion":"4.19.0","rhcosVersion":"9.6.20250701-0"}}}}`,
			"None", &EnforcementStatus{Mode: "Automatic", OCPVersion: "4.19.0", RHCOSVersion: "9.6.20250701-0"}},
		"manual status only": {`{"kind":"MachineConfiguration","spec":{},
			"status":{"bootImageSkewEnforcementStatus":{"mode":"Manual","manual":{"mode":"OCPVersion","ocpVersion":"4.16.0"}}}}`,
			"Manual", &EnforcementStatus{Mode: "Manual", ManualMode: "OCPVersion", OCPVersion: "4.16.0"}},
		"no status":   {`{"kind":"MachineConfiguration","spec":{}}`, "", nil},
		"bare policy": {`{"mode":"None"}`, "None", nil},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if p.Mode != tc.mode || !reflect.DeepEqual(p.ClusterStatus, tc.want) {
				t.Errorf("mode %q, clusterStatus %+v; want %q, %+v", p.Mode, p.ClusterStatus, tc.mode, tc.want)
			}
		})
	}
	if _, err := ParsePolicy([]byte(`{"mode":"None","clusterStatus":{"mode":"None"}}`)); err == nil {
		t.Error("a policy file setting clusterStatus: no error")
	}
}

// A policy file is opened only when regular (a FIFO would hang a reload)
// and refused when anyone may write it.
func TestLoadPolicyFileKinds(t *testing.T) {
	dir := t.TempDir()
	fifo, link := filepath.Join(dir, "fifo"), filepath.Join(dir, "policy.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, link)
	if _, err := LoadPolicy(link); err == nil || !strings.Contains(err.Error(), "a named pipe (FIFO), so never opened") {
		t.Errorf("a symlink to a FIFO: %v", err)
	}
	open := filepath.Join(dir, "open.yaml")
	os.WriteFile(open, []byte("mode: None\n"), 0o644)
	os.Chmod(open, 0o666)
	if _, err := LoadPolicy(open); err == nil || !strings.Contains(err.Error(), "writable by anyone (mode 0666)") {
		t.Errorf("a world-writable policy: %v", err)
	}
	os.Chmod(open, 0o644)
	if _, err := LoadPolicy(open); err != nil {
		t.Errorf("mode 0644: %v", err)
	}
}
