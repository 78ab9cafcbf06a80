package convert

import (
	"errors"
	"slices"
	"testing"

	ign22 "github.com/coreos/ignition/config/v2_2/types"
	"github.com/coreos/ignition/v2/config/v3_6/types"
)

// spec2Cases are the spec-3.0 configs spec 2.2 cannot hold (blocked names
// the paths translate must refuse), or can hold only with help.
var spec2Cases = []struct {
	name    string
	blocked []string
}{
	{"spec2-defaults", nil},
	{"spec2-partition-size", []string{"$.storage.disks.0.partitions.0"}},
	{"spec2-partition-shouldexist", []string{"$.storage.disks.0.partitions.0.shouldExist"}},
	{"spec2-partition-wipeentry", []string{"$.storage.disks.0.partitions.0.wipePartitionEntry"}},
	{"spec2-empty-file", []string{"$.storage.files.0.contents"}},
	{"spec2-filesystem-noformat", []string{"$.storage.filesystems.0.format"}},
}

func TestSpec2(t *testing.T) {
	for _, tc := range spec2Cases {
		t.Run(tc.name, func(t *testing.T) {
			p := parseFeature(t, tc.name)
			if v, reasons := minVersion(&p.Config); v != V3_0 {
				t.Fatalf("MinVersion = %s (%v), want 3.0.0: spec 2.2 is the only spec these trouble", v, reasons)
			}
			if _, err := translateTo(&p.Config, V3_0); err != nil {
				t.Fatalf("translate to 3.0.0: %v", err)
			}
			typed, err := translateTo(&p.Config, V2_2)
			if tc.blocked == nil {
				if err != nil {
					t.Fatalf("translate to 2.2.0: %v", err)
				}
				return
			}
			var ce *CannotExpressError
			if !errors.As(err, &ce) {
				t.Fatalf("translate to 2.2.0 = %v, %v; want a CannotExpressError", typed, err)
			}
			var got []string
			for _, r := range ce.Reasons {
				got = append(got, r.Path.String())
			}
			if !slices.Equal(got, tc.blocked) {
				t.Errorf("CannotExpressError names %q, want %q", got, tc.blocked)
			}
		})
	}
}

// What spec 2.2 output must spell out so that a spec-2 node does what the
// spec-3 config means.
func TestSpec2Output(t *testing.T) {
	p := parseFeature(t, "spec2-defaults")
	typed, err := translateTo(&p.Config, V2_2)
	if err != nil {
		t.Fatal(err)
	}
	out := typed.(ign22.Config)
	type node struct {
		fs, path string
		mode     int
		append   bool
	}
	var files []node
	for _, f := range out.Storage.Files {
		n := node{fs: f.Filesystem, path: f.Path, append: f.Append, mode: -1}
		if f.Mode != nil {
			n.mode = *f.Mode
		}
		files = append(files, n)
	}
	want := []node{
		// Ignition v0.x creates a file without a mode with mode 0.
		{"root", "/etc/nomode", 0o644, false},
		{"/var", "/lib/onvar", 0o600, false},
		// v32tov22 put this on /var: "/varlib" starts with "/var".
		{"root", "/varlib/notonvar", 0o600, false},
		{"root", "/etc/both", 0o644, false},
		{"root", "/etc/both", 0o644, true},
		{"root", "/etc/both", 0o644, true},
	}
	if !slices.Equal(files, want) {
		t.Errorf("files = %+v\nwant    %+v", files, want)
	}
	if d := out.Storage.Directories; len(d) != 1 || d[0].Mode == nil || *d[0].Mode != 0o755 {
		t.Errorf("directory without mode = %+v, want mode 0755 (Ignition v0.x would use 0)", d)
	}
	if fs := out.Storage.Filesystems; len(fs) != 2 || fs[0].Name != "/var" || fs[1].Mount == nil || fs[1].Mount.Format != "ext4" {
		t.Errorf("filesystems = %+v", fs)
	}

	// Parsed back as spec 2.2, it is the config it came from.
	b, err := Marshal(typed, false)
	if err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, "2.2 output", b)
	if d := diff(spec2Equivalent(normalVersion(p.Config)), spec2Equivalent(normalVersion(back.Config))); len(d) > 0 {
		t.Errorf("2.2 round trip differs: %v", d)
	}
}

// spec2Equivalent may treat as equal only what a node treats as equal: it
// must not hide a real change.
func TestSpec2EquivalentKeepsMeaning(t *testing.T) {
	base := func() Config {
		c := Config{}
		c.Storage.Files = []types.File{{Node: types.Node{Path: "/a"}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: new("data:,a")}}}}
		c.Systemd.Units = []types.Unit{{Name: "a.service", Enabled: new(false)}}
		c.Passwd.Users = []types.PasswdUser{{Name: "u", UID: new(0)}}
		return c
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		equal  bool
	}{
		{"file mode 0644 is the default", func(c *Config) { c.Storage.Files[0].Mode = new(0o644) }, true},
		{"file mode 0600 is not", func(c *Config) { c.Storage.Files[0].Mode = new(0o600) }, false},
		{"overwrite false is the default", func(c *Config) { c.Storage.Files[0].Overwrite = new(false) }, true},
		{"overwrite true is not", func(c *Config) { c.Storage.Files[0].Overwrite = new(true) }, false},
		{"empty compression is none", func(c *Config) { c.Storage.Files[0].Contents.Compression = new("") }, true},
		{"gzip is not", func(c *Config) { c.Storage.Files[0].Contents.Compression = new("gzip") }, false},
		{"enabled false is not unset", func(c *Config) { c.Systemd.Units[0].Enabled = nil }, false},
		{"uid 0 is not unset", func(c *Config) { c.Passwd.Users[0].UID = nil }, false},
		{"empty unit contents are none", func(c *Config) { c.Systemd.Units[0].Contents = new("") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.change(&b)
			d := diff(spec2Equivalent(a), spec2Equivalent(b))
			if (len(d) == 0) != tc.equal {
				t.Errorf("diff = %v, want equal=%v", d, tc.equal)
			}
			if len(diff(a, base())) > 0 {
				t.Error("spec2Equivalent changed its argument")
			}
		})
	}
}

func normalVersion(c Config) Config {
	c.Ignition.Version = ""
	return c
}

// TestSpec2UserKeys checks the MCO's fold of a spec 2 config's repeated
// users, as removeIgnDuplicateFilesUnitsUsers and dedupePasswdUserSSHKeys
// (machine-config-operator pkg/controller/common/helpers.go) write it: start
// from the last entry (its fields and keys), append each earlier entry's
// keys from the last entry to the first, then drop repeated keys, keeping
// the first. The order is in the rendered name.
func TestSpec2UserKeys(t *testing.T) {
	cases := []struct {
		name  string
		users string
		keys  []types.SSHAuthorizedKey
		shell string
	}{
		{"one entry, repeated key", `{"name":"core","sshAuthorizedKeys":["a","b","a"]}`, []types.SSHAuthorizedKey{"a", "b"}, ""},
		{"two entries: the last one's keys first", `{"name":"core","sshAuthorizedKeys":["old"]},{"name":"core","sshAuthorizedKeys":["new"]}`,
			[]types.SSHAuthorizedKey{"new", "old"}, ""},
		{"three entries: then the earlier ones, last to first",
			`{"name":"core","sshAuthorizedKeys":["a1","a2"]},{"name":"core","sshAuthorizedKeys":["b1"]},{"name":"core","sshAuthorizedKeys":["c1","c2"]}`,
			[]types.SSHAuthorizedKey{"c1", "c2", "b1", "a1", "a2"}, ""},
		{"a key in several entries stays where it first comes",
			`{"name":"core","sshAuthorizedKeys":["x","a"]},{"name":"core","sshAuthorizedKeys":["b","x"]}`,
			[]types.SSHAuthorizedKey{"b", "x", "a"}, ""},
		{"the last entry's fields win", `{"name":"core","shell":"/bin/sh","sshAuthorizedKeys":["a"]},{"name":"core","shell":"/bin/zsh"}`,
			[]types.SSHAuthorizedKey{"a"}, "/bin/zsh"},
		{"an entry without keys", `{"name":"core"},{"name":"core"}`, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.name, []byte(`{"ignition":{"version":"2.2.0"},"passwd":{"users":[`+tc.users+`]}}`))
			users := p.Config.Passwd.Users
			if len(users) != 1 {
				t.Fatalf("users = %+v, want one", users)
			}
			if !slices.Equal(users[0].SSHAuthorizedKeys, tc.keys) {
				t.Errorf("keys = %q, want %q", users[0].SSHAuthorizedKeys, tc.keys)
			}
			if got := deref(users[0].Shell); got != tc.shell {
				t.Errorf("shell = %q, want %q", got, tc.shell)
			}
		})
	}
}
