package controller

import (
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/convert"
)

func ptr[T any](v T) *T { return &v }

// checkReconcilable against upstream's rules, each shown to refuse and to
// name the MachineConfig that brings the change, and what it lets through.
func TestCheckReconcilable(t *testing.T) {
	file := func(path string) types.File {
		return types.File{Node: types.Node{Path: path}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: ptr("data:,x")}}}
	}
	appended := file("/etc/a")
	appended.Append = []types.Resource{{Source: ptr("data:,y")}}
	base := func() *convert.Config {
		c := &convert.Config{}
		c.Storage.Files = []types.File{file("/etc/base")}
		c.Passwd.Users = []types.PasswdUser{{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"k1"}}}
		c.Storage.Links = []types.Link{{Node: types.Node{Path: "/etc/old-link"}, LinkEmbedded1: types.LinkEmbedded1{Target: ptr("/x")}}}
		return c
	}
	for _, tc := range []struct {
		name      string
		change    func(*convert.Config)
		fips      bool
		overrides []string
		want      string // "" reconcilable
	}{
		{"a file added", func(c *convert.Config) { c.Storage.Files = append(c.Storage.Files, file("/etc/new")) }, false, nil, ""},
		{"core's SSH keys", func(c *convert.Config) { c.Passwd.Users[0].SSHAuthorizedKeys = []types.SSHAuthorizedKey{"k2"} }, false, nil, ""},
		{"core's password", func(c *convert.Config) { c.Passwd.Users[0].PasswordHash = ptr("$6$x") }, false, nil, ""},
		{"a link removed", func(c *convert.Config) { c.Storage.Links = nil }, false, nil, ""},
		{"a link added", func(c *convert.Config) {
			c.Storage.Links = append(c.Storage.Links, types.Link{Node: types.Node{Path: "/etc/l"}, LinkEmbedded1: types.LinkEmbedded1{Target: ptr("/y")}})
		}, false, nil, "ignition links section contains changes ($.spec.config.storage.links)"},
		{"core's shell", func(c *convert.Config) { c.Passwd.Users[0].Shell = ptr("/bin/zsh") }, false, nil, "SSH keys and password hash are not reconcilable"},
		{"another user", func(c *convert.Config) { c.Passwd.Users = append(c.Passwd.Users, types.PasswdUser{Name: "alice"}) }, false, nil, "non-core user"},
		{"a group", func(c *convert.Config) { c.Passwd.Groups = []types.PasswdGroup{{Name: "g"}} }, false, nil, "ignition Passwd Groups section contains changes"},
		{"kernel arguments", func(c *convert.Config) { c.KernelArguments.ShouldExist = []types.KernelArgument{"nosmt"} }, false, nil, "ignition kargs section contains changes"},
		{"a disk", func(c *convert.Config) { c.Storage.Disks = []types.Disk{{Device: "/dev/sdb"}} }, false, nil, "ignition disks section contains changes"},
		{"a disk, overridden", func(c *convert.Config) { c.Storage.Disks = []types.Disk{{Device: "/dev/sdb"}} }, false, []string{"Disks"}, ""},
		{"a filesystem", func(c *convert.Config) { c.Storage.Filesystems = []types.Filesystem{{Device: "/dev/sdb1"}} }, false, []string{"Disks"}, "ignition filesystems section contains changes"},
		{"a filesystem, overridden", func(c *convert.Config) { c.Storage.Filesystems = []types.Filesystem{{Device: "/dev/sdb1"}} }, false, []string{"FileSystems"}, ""},
		{"a raid", func(c *convert.Config) { c.Storage.Raid = []types.Raid{{Name: "md0"}} }, false, nil, "ignition raid section contains changes"},
		{"a raid, overridden", func(c *convert.Config) { c.Storage.Raid = []types.Raid{{Name: "md0"}} }, false, []string{"Raid"}, ""},
		{"a directory", func(c *convert.Config) { c.Storage.Directories = []types.Directory{{Node: types.Node{Path: "/d"}}} }, false, nil, "ignition directories section contains changes"},
		{"an append", func(c *convert.Config) { c.Storage.Files = append(c.Storage.Files, appended) }, false, nil, "ignition file /etc/a includes append"},
		{"the force file", func(c *convert.Config) { c.Storage.Files = append(c.Storage.Files, file(machineConfigDaemonForceFile)) }, false, nil, "cannot create /run/machine-config-daemon-force via Ignition"},
		{"FIPS", func(*convert.Config) {}, true, nil, "detected change to FIPS flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := base()
			tc.change(next)
			blame := base()
			tc.change(blame)
			e := checkReconcilable(reconcileInput{current: "rendered-worker-1", cur: base(), next: next, nextFIPS: tc.fips, overrides: tc.overrides,
				components: func() []component {
					return []component{{name: "00-base", cfg: base()}, {name: "99-change", cfg: blame, fips: tc.fips}}
				}})
			switch {
			case tc.want == "" && e != nil:
				t.Fatalf("refused: %v", e)
			case tc.want == "":
			case e == nil:
				t.Fatalf("not refused, want %q", tc.want)
			case !strings.Contains(e.Error(), tc.want) || !strings.Contains(e.Error(), `current config "rendered-worker-1" and base config "99-change"`):
				t.Fatalf("got %q, want %q naming 99-change", e.Error(), tc.want)
			}
		})
	}
}

// A pool's patch starts from this replica's last write of it only while
// the cache still holds the version that write replaced.
func TestLastWritesAhead(t *testing.T) {
	pool := func(rv, config string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"configuration": map[string]any{"name": config}}}}
		u.SetName("worker")
		u.SetResourceVersion(rv)
		return u
	}
	var l lastWrites
	if got := l.ahead(nil); got != nil {
		t.Errorf("nil cached: %v", got)
	}
	if got := l.ahead(pool("1", "a")); configuration(got) != "a" {
		t.Errorf("nothing written: %s", configuration(got))
	}
	l.wrote("1", pool("2", "b"))
	for _, tc := range []struct {
		name, cachedRV, want string
	}{
		{"the cache behind the write", "1", "b"},
		{"the cache caught up", "2", "a-from-cache"},
		{"someone wrote since", "3", "a-from-cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := configuration(l.ahead(pool(tc.cachedRV, "a-from-cache"))); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}
