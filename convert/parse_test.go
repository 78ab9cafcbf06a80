package convert

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// A minimal config of every input spec, each with one file, so that Parse
// is seen to read content and not only the version.
var spec2File = `"storage":{"files":[{"filesystem":"root","path":"/etc/hello","contents":{"source":"data:,hi"},"mode":420}]}`
var spec3File = `"storage":{"files":[{"path":"/etc/hello","contents":{"source":"data:,hi"},"mode":420}]}`

func TestParseVersions(t *testing.T) {
	for _, v := range inputVersions {
		t.Run(v.String(), func(t *testing.T) {
			body := spec3File
			if v.Major == 2 {
				body = spec2File
			}
			p, err := Parse([]byte(`{"ignition":{"version":"` + v.String() + `"},` + body + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if p.Version != v || p.Butane != "" {
				t.Errorf("Version, Butane = %s, %q; want %s, \"\"", p.Version, p.Butane, v)
			}
			if p.Config.Ignition.Version != Newest.String() {
				t.Errorf("internal form declares %s, want %s", p.Config.Ignition.Version, Newest)
			}
			f := p.Config.Storage.Files
			if len(f) != 1 || f[0].Path != "/etc/hello" || f[0].Contents.Source == nil || *f[0].Contents.Source != "data:,hi" || f[0].Mode == nil || *f[0].Mode != 420 {
				t.Errorf("files = %+v", f)
			}
		})
	}
}

func TestParseButane(t *testing.T) {
	const file = "storage:\n  files:\n  - path: /etc/hello\n    contents:\n      inline: hi\n"
	const openshift = "metadata:\n  name: 99-worker-hello\n  labels:\n    machineconfiguration.openshift.io/role: worker\n"
	for _, tc := range []struct {
		variant, version string
		want             Version
	}{
		{"fcos", "1.0.0", V3_0},
		{"fcos", "1.5.0", V3_4},
		{"fcos", "1.6.0", V3_5},
		{"fcos", "1.7.0", V3_6},
		{"openshift", "4.8.0", V3_2},
		{"openshift", "4.13.0", V3_2},
		{"openshift", "4.14.0", V3_4},
		{"openshift", "4.18.0", V3_4},
		{"openshift", "4.19.0", V3_5},
		{"openshift", "4.22.0", V3_5},
	} {
		name := tc.variant + " " + tc.version
		t.Run(name, func(t *testing.T) {
			src := "variant: " + tc.variant + "\nversion: " + tc.version + "\n" + file
			if tc.variant == "openshift" {
				src += openshift
			}
			p, err := Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if p.Version != tc.want || p.Butane != name {
				t.Errorf("Version, Butane = %s, %q; want %s, %q", p.Version, p.Butane, tc.want, name)
			}
			if f := p.Config.Storage.Files; len(f) != 1 || f[0].Path != "/etc/hello" {
				t.Errorf("files = %+v", f)
			}
		})
	}
}

func TestParseRefusesVersions(t *testing.T) {
	for _, tc := range []struct{ name, raw string }{
		{"3.7.0-experimental", `{"ignition":{"version":"3.7.0-experimental"}}`},
		{"3.7.0", `{"ignition":{"version":"3.7.0"}}`},
		{"2.5.0-experimental", `{"ignition":{"version":"2.5.0-experimental"}}`},
		{"4.0.0", `{"ignition":{"version":"4.0.0"}}`},
		{"1.0.0", `{"ignition":{"version":"1.0.0"}}`},
		{"not semver", `{"ignition":{"version":"3.2"}}`},
		{"leading v", `{"ignition":{"version":"v3.2.0"}}`},
		{"no version", `{"ignition":{}}`},
		{"spec 1", `{"ignitionVersion":1}`},
		{"butane experimental", "variant: fcos\nversion: 1.8.0-experimental\n"},
		{"butane unknown version", "variant: fcos\nversion: 9.0.0\n"},
		{"butane unknown variant", "variant: nope\nversion: 1.0.0\n"},
		{"butane openshift experimental", "variant: openshift\nversion: 4.23.0-experimental\nmetadata:\n  name: x\n  labels:\n    machineconfiguration.openshift.io/role: worker\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.raw))
			var ue *UnsupportedVersionError
			if !errors.As(err, &ue) {
				t.Fatalf("%v is no *UnsupportedVersionError", err)
			}
			for _, v := range []string{"2.0.0", "2.4.0", "3.0.0", "3.6.0"} {
				if !strings.Contains(err.Error(), v) {
					t.Errorf("error %q does not list supported version %s", err, v)
				}
			}
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		name, raw    string
		format       string
		line, column int
		offset       int64
	}{
		{"trailing comma", "{\n  \"ignition\": {\"version\": \"3.2.0\",}\n}", "JSON", 2, 35, 37},
		{"unclosed", "{\"ignition\":{\"version\":\"3.2.0\"}", "JSON", 1, 31, 31},
		{"garbage after", "{\"ignition\":{\"version\":\"3.2.0\"}}\nx", "JSON", 2, 1, 34},
		{"bad yaml", "variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n  - path: /a\n  bad\n", "YAML", 7, 0, -1},
		{"yaml tab", "variant: fcos\n\tversion: 1.5.0\n", "YAML", 2, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.raw))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse = %v, want a SyntaxError", err)
			}
			if se.Format != tc.format || se.Line != tc.line || se.Column != tc.column || se.Offset != tc.offset {
				t.Errorf("got %s line %d column %d offset %d, want %s %d %d %d (%v)", se.Format, se.Line, se.Column, se.Offset, tc.format, tc.line, tc.column, tc.offset, err)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("error %q names no line", err)
			}
		})
	}
}

// Unknown keys are errors naming their path: a parser that drops what it
// does not know (kernelArguments in a 3.2.0 config) would lose content.
func TestParseRefusesUnknownKeys(t *testing.T) {
	const ocp = "metadata:\n  name: x\n  labels:\n    machineconfiguration.openshift.io/role: worker\n"
	for _, tc := range []struct {
		name, raw string
		paths     []string
	}{
		{"newer field in 3.2.0", `{"ignition":{"version":"3.2.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`, []string{"$.kernelArguments"}},
		{"newer field in 3.3.0", `{"ignition":{"version":"3.3.0"},"storage":{"luks":[{"name":"d","device":"/dev/vdb","discard":true}]}}`, []string{"$.storage.luks.0.discard"}},
		{"typo in 3.6.0", `{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/a","contnts":{}}]}}`, []string{"$.storage.files.0.contnts"}},
		{"wrong case in 3.4.0", `{"ignition":{"version":"3.4.0"},"Storage":{}}`, []string{"$.Storage"}},
		{"spec 3 field in 2.2.0", `{"ignition":{"version":"2.2.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`, []string{"$.kernelArguments"}},
		{"typo in 2.2.0", `{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/a","contnts":{}}]}}`, []string{"$.storage.files.0.contnts"}},
		{"two in 2.4.0", `{"ignition":{"version":"2.4.0","bogus":1},"systemd":{"units":[{"name":"a.service","enabld":true}]}}`, []string{"$.ignition.bogus", "$.systemd.units.0.enabld"}},
		{"butane", "variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n  - path: /a\n    contnts: {}\n", []string{"$.storage.files.0.contnts"}},
		{"butane openshift raw", "variant: openshift\nversion: 4.14.0\n" + ocp + "openshift:\n  kernel_arguments: [nosmt]\n", []string{"$.openshift.kernel_arguments"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := invalidPaths(t, tc.raw)
			if !slices.Equal(got, tc.paths) {
				t.Errorf("problems at %q, want %q (%v)", got, tc.paths, err)
			}
		})
	}
}

// Validation errors name the JSON path of what is wrong.
func TestParseValidationPaths(t *testing.T) {
	for _, tc := range []struct {
		name, raw, path string
	}{
		{"relative path", `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"etc/a"}]}}`, "$.storage.files.0.path"},
		{"duplicate file", `{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/a"},{"path":"/a"}]}}`, "$.storage.files.1"},
		{"bad hash", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a","contents":{"source":"https://x/a","verification":{"hash":"md5-1"}}}]}}`, "$.storage.files.0.contents.verification.hash"},
		{"bad scheme", `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/a","contents":{"source":"ftp://x/a"}}]}}`, "$.storage.files.0.contents.source"},
		{"gs in 3.1", `{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/a","contents":{"source":"gs://b/o"}}]}}`, "$.storage.files.0.contents.source"},
		{"wrong type", `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/a","mode":"0644"}]}}`, "$.storage.files.0.mode"},
		{"version not a string", `{"ignition":{"version":3}}`, "$.ignition.version"},
		// Valid in their own spec, refused by a newer one: the internal form could not be written.
		{"3.0 link without target", `{"ignition":{"version":"3.0.0"},"storage":{"links":[{"path":"/l"}]}}`, "$.storage.links.0.target"},
		{"3.0 merge without source", `{"ignition":{"version":"3.0.0","config":{"merge":[{"verification":{}}]}}}`, "$.ignition.config.merge.0"},
		{"3.2 custom clevis without pin", `{"ignition":{"version":"3.2.0"},"storage":{"luks":[{"name":"d","device":"/dev/vdb","clevis":{"custom":{"needsNetwork":true}}}]}}`, "$.storage.luks.0.clevis.custom.pin"},
		{"spec 2 duplicate groups", `{"ignition":{"version":"2.2.0"},"passwd":{"groups":[{"name":"g"},{"name":"g"}]}}`, "$.passwd.groups.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := invalidPaths(t, tc.raw)
			if !slices.Contains(got, tc.path) {
				t.Errorf("problems at %q, want %q among them (%v)", got, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name %s", err, tc.path)
			}
		})
	}
}

// invalidPaths parses raw, which must fail with an InvalidError, and
// returns the paths of its problems.
func invalidPaths(t *testing.T, raw string) ([]string, error) {
	t.Helper()
	_, err := Parse([]byte(raw))
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("Parse = %v, want an InvalidError", err)
	}
	var got []string
	for _, p := range ie.Problems {
		got = append(got, p.Path.String())
	}
	return got, err
}

func TestParseEmpty(t *testing.T) {
	for _, raw := range []string{"", "  \n", "{}"} {
		if _, err := Parse([]byte(raw)); err == nil {
			t.Errorf("Parse(%q) succeeded", raw)
		}
	}
}

// Spec 2 repeats files, units and users, applying them in order; spec 3
// holds each once. Parse folds them as Ignition v0.x would apply them, keeps
// the order of first appearance, and takes appends and files on mounted
// filesystems (ign-converter's own folding refuses both).
func TestParseSpec2Folds(t *testing.T) {
	raw := `{"ignition":{"version":"2.2.0"},
	 "storage":{
	  "filesystems":[{"name":"/var","mount":{"device":"/dev/vdb","format":"xfs"}},{"name":"scratch","mount":{"device":"/dev/vdc","format":"ext4"}}],
	  "files":[
	   {"filesystem":"root","path":"/etc/b","contents":{"source":"data:,old"},"mode":420},
	   {"filesystem":"root","path":"/etc/a","contents":{"source":"data:,a1"},"mode":420},
	   {"filesystem":"root","path":"/etc/a","contents":{"source":"data:,a2"},"append":true},
	   {"filesystem":"root","path":"/etc/b","contents":{"source":"data:,new"},"mode":384},
	   {"filesystem":"root","path":"/etc/c","contents":{"source":"data:,c1"},"append":true,"mode":384},
	   {"filesystem":"/var","path":"/lib/x","contents":{"source":"data:,x"},"mode":420}]},
	 "systemd":{"units":[
	   {"name":"a.service","contents":"[Unit]\n","dropins":[{"name":"1.conf","contents":"one"}]},
	   {"name":"b.service","mask":true},
	   {"name":"a.service","enabled":true,"dropins":[{"name":"1.conf","contents":"uno"},{"name":"2.conf","contents":"two"}]}]},
	 "passwd":{"users":[
	   {"name":"core","sshAuthorizedKeys":["k1"]},
	   {"name":"core","sshAuthorizedKeys":["k2","k1"],"shell":"/bin/zsh"}]}}`
	p, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		path, contents string
		appends        []string
		mode           int
	}
	var files []file
	for _, f := range p.Config.Storage.Files {
		x := file{path: f.Path, mode: -1}
		if f.Contents.Source != nil {
			x.contents = *f.Contents.Source
		}
		for _, a := range f.Append {
			x.appends = append(x.appends, *a.Source)
		}
		if f.Mode != nil {
			x.mode = *f.Mode
		}
		files = append(files, x)
	}
	want := []file{
		{"/etc/b", "data:,new", nil, 0o600},
		{"/etc/a", "data:,a1", []string{"data:,a2"}, 0o644},
		{"/etc/c", "", []string{"data:,c1"}, 0o600},
		{"/var/lib/x", "data:,x", nil, 0o644},
	}
	if !slices.EqualFunc(files, want, func(a, b file) bool {
		return a.path == b.path && a.contents == b.contents && slices.Equal(a.appends, b.appends) && a.mode == b.mode
	}) {
		t.Errorf("files = %+v\nwant    %+v", files, want)
	}
	if fs := p.Config.Storage.Filesystems; len(fs) != 2 || fs[0].Path == nil || *fs[0].Path != "/var" || fs[1].Path != nil {
		t.Errorf("filesystems = %+v", fs)
	}
	u := p.Config.Systemd.Units
	if len(u) != 2 || u[0].Name != "a.service" || u[1].Name != "b.service" {
		t.Fatalf("units = %+v", u)
	}
	if u[0].Contents == nil || *u[0].Contents != "[Unit]\n" || u[0].Enabled == nil || !*u[0].Enabled || len(u[0].Dropins) != 2 || *u[0].Dropins[0].Contents != "uno" {
		t.Errorf("a.service = %+v", u[0])
	}
	users := p.Config.Passwd.Users
	if len(users) != 1 || !slices.Equal(users[0].SSHAuthorizedKeys, []types.SSHAuthorizedKey{"k2", "k1"}) || users[0].Shell == nil || *users[0].Shell != "/bin/zsh" {
		t.Errorf("users = %+v", users)
	}
}

// Spec 2.0–2.2 partition sizes count sectors of a size spec 3 cannot know.
func TestParseSpec2PartitionSizes(t *testing.T) {
	zero := `{"ignition":{"version":"2.2.0"},"storage":{"disks":[{"device":"/dev/vdb","partitions":[{"label":"a","number":1,"size":0,"start":0}]}]}}`
	p, err := Parse([]byte(zero))
	if err != nil {
		t.Fatal(err)
	}
	if pt := p.Config.Storage.Disks[0].Partitions[0]; pt.SizeMiB != nil || pt.StartMiB != nil {
		t.Errorf("size 0 (the default) became %v, %v", pt.SizeMiB, pt.StartMiB)
	}
	sized := `{"ignition":{"version":"2.2.0"},"storage":{"disks":[{"device":"/dev/vdb","partitions":[{"label":"a","number":1,"size":2048}]}]}}`
	_, err = Parse([]byte(sized))
	var ie *InvalidError
	if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Path.String() != "$.storage.disks.0.partitions.0.size" {
		t.Errorf("Parse = %v, want an InvalidError at the size", err)
	}
}

func TestParseVersionString(t *testing.T) {
	testkit.Cases(t, "testdata/versions.txt", 4, func(t *testing.T, c []string) {
		in, want, written := c[1], c[2], c[3] == "yes"
		got, err := ParseVersion(in)
		if want == "error" && err == nil || want != "error" && (err != nil || got.String() != want) {
			t.Errorf("ParseVersion(%q) = %s, %v; want %s", in, got, err, want)
		}
		_, err = ParseOutputVersion(in)
		var ue *UnsupportedVersionError
		switch {
		case (err == nil) != written:
			t.Errorf("ParseOutputVersion(%q): %v", in, err)
		case err != nil && want != "error" && !errors.As(err, &ue):
			t.Errorf("ParseOutputVersion(%q) = %v, want an UnsupportedVersionError", in, err)
		}
	})
}

// ign-converter's v24tov31 gives every merged config and CA the last one's
// source; Parse keeps each its own.
func TestParseSpec2References(t *testing.T) {
	raw := `{"ignition":{"version":"2.2.0",
	  "config":{"append":[{"source":"https://example.com/a.ign"},{"source":"https://example.com/b.ign"}]},
	  "security":{"tls":{"certificateAuthorities":[{"source":"https://example.com/a.pem"},{"source":"https://example.com/b.pem"}]}}}}`
	p, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Config.Ignition.Config.Merge {
		got = append(got, *r.Source)
	}
	for _, r := range p.Config.Ignition.Security.TLS.CertificateAuthorities {
		got = append(got, *r.Source)
	}
	want := []string{"https://example.com/a.ign", "https://example.com/b.ign", "https://example.com/a.pem", "https://example.com/b.pem"}
	if !slices.Equal(got, want) {
		t.Errorf("sources = %q, want %q", got, want)
	}
}

// A config valid in its own spec but not in the newest (spec 3.3 made a
// link's target required): Parse refuses it, ParseDeclared reads it, and it
// encodes at its own spec.
func TestParseDeclared(t *testing.T) {
	raw := []byte(`{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x"}]}}`)
	if _, err := Parse(raw); err == nil || !strings.Contains(err.Error(), "valid in spec 3.2.0 but not in 3.6.0: link target is required") {
		t.Errorf("Parse: %v", err)
	}
	p, err := ParseDeclared(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Encode(&p.Config, V3_2, false); err != nil {
		t.Errorf("encode at 3.2.0: %v", err)
	}
	if _, err := ParseDeclared([]byte(`{"ignition":{"version":"3.5.0"},"storage":{"links":[{"path":"/etc/x"}]}}`)); err == nil {
		t.Error("ParseDeclared read a 3.5.0 link without a target")
	}
}
