package convert

import (
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
)

func TestDiff(t *testing.T) {
	src := func(s string) types.Resource { return types.Resource{Source: &s} }
	file := func(path string) types.File { return types.File{Node: types.Node{Path: path}} }
	for _, tc := range []struct {
		name  string
		a, b  Config
		paths []string
	}{
		{"equal", Config{}, Config{}, nil},
		{"nil and empty lists are equal",
			Config{KernelArguments: types.KernelArguments{ShouldExist: nil}},
			Config{KernelArguments: types.KernelArguments{ShouldExist: []types.KernelArgument{}}}, nil},
		{"unset is not false",
			Config{Passwd: types.Passwd{Users: []types.PasswdUser{{Name: "a"}}}},
			Config{Passwd: types.Passwd{Users: []types.PasswdUser{{Name: "a", System: new(false)}}}},
			[]string{"$.passwd.users.0.system"}},
		{"lost file named once",
			Config{Storage: types.Storage{Files: []types.File{file("/a"), file("/b"), file("/c")}}},
			Config{Storage: types.Storage{Files: []types.File{file("/a"), file("/c")}}},
			[]string{"$.storage.files.1"}},
		{"reordered files",
			Config{Storage: types.Storage{Files: []types.File{file("/a"), file("/b")}}},
			Config{Storage: types.Storage{Files: []types.File{file("/b"), file("/a")}}},
			[]string{"$.storage.files"}},
		// Merged configs apply in order: a step that swapped them would change the node.
		{"reordered merges",
			Config{Ignition: types.Ignition{Config: types.IgnitionConfig{Merge: []types.Resource{src("https://a"), src("https://b")}}}},
			Config{Ignition: types.Ignition{Config: types.IgnitionConfig{Merge: []types.Resource{src("https://b"), src("https://a")}}}},
			[]string{"$.ignition.config.merge"}},
		// Appends may repeat a source; losing one of two is a loss.
		{"one of two equal appends lost",
			Config{Storage: types.Storage{Files: []types.File{{Node: types.Node{Path: "/a"}, FileEmbedded1: types.FileEmbedded1{Append: []types.Resource{src("data:,x"), src("data:,x")}}}}}},
			Config{Storage: types.Storage{Files: []types.File{{Node: types.Node{Path: "/a"}, FileEmbedded1: types.FileEmbedded1{Append: []types.Resource{src("data:,x")}}}}}},
			[]string{"$.storage.files.0.append.1"}},
		{"changed field inside a moved entry",
			Config{Systemd: types.Systemd{Units: []types.Unit{{Name: "a"}, {Name: "b", Mask: new(true)}}}},
			Config{Systemd: types.Systemd{Units: []types.Unit{{Name: "b"}, {Name: "a"}}}},
			[]string{"$.systemd.units.1.mask", "$.systemd.units"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range diff(tc.a, tc.b) {
				got = append(got, p.Path.String())
			}
			if !slices.Equal(got, tc.paths) {
				t.Errorf("diff at %q, want %q", got, tc.paths)
			}
		})
	}
}

// Loss reports name paths and sizes, never contents: sources are data URLs,
// password hashes are secrets.
func TestDiffHidesContents(t *testing.T) {
	secret := "data:,hunter2"
	a := Config{Storage: types.Storage{Files: []types.File{{Node: types.Node{Path: "/a"}, FileEmbedded1: types.FileEmbedded1{Append: []types.Resource{{Source: &secret}}}}}}}
	a.Passwd.Users = []types.PasswdUser{{Name: "u", PasswordHash: new("$6$hunter2")}}
	for _, p := range diff(a, Config{Storage: types.Storage{Files: []types.File{{Node: types.Node{Path: "/a"}}}}}) {
		if s := p.String(); strings.Contains(s, "hunter2") {
			t.Errorf("loss report shows contents: %s", s)
		}
	}
}
