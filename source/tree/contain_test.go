package tree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
)

const butaneHead = `variant: openshift
version: 4.14.0
metadata:
  name: 99-worker-x
  labels:
    machineconfiguration.openshift.io/role: worker
`

// A local file a Butane config embeds that resolves out of the tree through
// a link (a token file beside an innocent name) is refused, naming the
// Butane file, the object, the JSON path and the link; its contents are in
// no render.
func TestButaneLocalOutsideTree(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("SECRET-TOKEN"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, body, link, to, path string }{
		{"contents local", "storage:\n  files:\n    - path: /etc/motd.d/hello\n      contents:\n        local: innocent.txt\n",
			"innocent.txt", secret, "$.storage.files.0.contents.local"},
		{"a directory link on the way", "storage:\n  files:\n    - path: /etc/motd.d/hello\n      contents:\n        local: sub/token\n",
			"sub", filepath.Dir(secret), "$.storage.files.0.contents.local"},
		{"a unit's contents", "systemd:\n  units:\n    - name: x.service\n      contents_local: innocent.txt\n",
			"innocent.txt", secret, "$.systemd.units.0.contents_local"},
		{"ssh keys", "passwd:\n  users:\n    - name: core\n      ssh_authorized_keys_local: [keys, innocent.txt]\n",
			"innocent.txt", secret, "$.passwd.users.0.ssh_authorized_keys_local.1"},
		{"a tree", "storage:\n  trees:\n    - local: etc\n      path: /etc\n",
			"etc", filepath.Dir(secret), "$.storage.trees.0.local"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testkit.WriteTree(t, map[string]string{"99-worker-x.bu": butaneHead + c.body, "keys": "ssh-ed25519 AAAA x\n"})
			if err := os.Symlink(c.to, filepath.Join(dir, c.link)); err != nil {
				t.Fatal(err)
			}
			errs := loadErrs(t, dir) // a directory link is refused as a part of the tree too
			e, link := errs[0], filepath.Join(dir, c.link)
			if e.File != filepath.Join(dir, "99-worker-x.bu") || e.Object != "MachineConfig/99-worker-x" || e.Path.String() != c.path ||
				!errors.Is(e, errOutside) || !strings.Contains(e.Message, link+" is a symbolic link to "+c.to+", outside the tree") {
				t.Fatalf("error %v", e)
			}
			if strings.Contains(e.Error(), "SECRET-TOKEN") {
				t.Fatal("the error shows the secret")
			}
		})
	}
}

// Links that stay in the tree still work: a local file behind one (the
// ..data links of a mounted ConfigMap), a tree's files through one.
func TestButaneLocalInsideTree(t *testing.T) {
	dir := testkit.WriteTree(t, map[string]string{
		"..2026_01/hello.txt":      "hello from a link\n",
		"..2026_01/99-worker-x.bu": butaneHead + "storage:\n  files:\n    - path: /etc/motd.d/hello\n      contents:\n        local: hello.txt\n",
	})
	for link, to := range map[string]string{"..data": "..2026_01", "hello.txt": "..data/hello.txt", "99-worker-x.bu": "..data/99-worker-x.bu"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := set.RenderPool("worker", render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.MachineConfig.Spec.Config); !strings.Contains(got, "hello%20from%20a%20link") {
		t.Fatalf("rendered %s", got)
	}
}

// A file of the tree, or a directory, linking out of it is refused, naming
// the link; the rest of the tree is read.
func TestTreeFileOutsideTree(t *testing.T) {
	outside := testkit.WriteTree(t, map[string]string{"mc.yaml": doc("20-b", "worker", "")})
	for _, link := range []struct{ name, to string }{{"20-b.yaml", filepath.Join(outside, "mc.yaml")}, {"more", outside}} {
		t.Run(link.name, func(t *testing.T) {
			dir := testkit.WriteTree(t, map[string]string{"10-a.yaml": doc("10-a", "worker", "")})
			if err := os.Symlink(link.to, filepath.Join(dir, link.name)); err != nil {
				t.Fatal(err)
			}
			errs := loadErrs(t, dir)
			p := filepath.Join(dir, link.name)
			if len(errs) != 1 || errs[0].File != p || !errors.Is(errs[0], errOutside) ||
				errs[0].Message != p+" is a symbolic link to "+link.to+", outside the tree "+dir+": not read (links must stay inside the tree)" {
				t.Fatalf("errors %v", errs)
			}
		})
	}
}
