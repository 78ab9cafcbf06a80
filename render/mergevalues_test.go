package render

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/coreos/ignition/v2/config/merge"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/shareddata"
)

// mergeEdgeCases are configs that meet each of Ignition's merge rules: a
// path in another list of the child (a file becomes a directory, a link),
// lists that keep duplicates (a file's append), a header without a value
// (removes the parent's), keyed lists merged item by item, pointers set or
// not, structs empty on one side.
var mergeEdgeCases = []string{
	`{"ignition":{"version":"3.6.0","config":{"merge":[{"source":"http://a","httpHeaders":[{"name":"X","value":"1"},{"name":"Y","value":"2"}]}]},"timeouts":{"httpTotal":5}},
	  "storage":{"files":[{"path":"/a","contents":{"source":"data:,a","compression":"gzip"},"append":[{"source":"data:,x"}],"mode":420},{"path":"/b"},{"path":"/c","overwrite":true}],
	  "directories":[{"path":"/d","mode":493}],"links":[{"path":"/e","target":"/a"}],
	  "luks":[{"name":"l","device":"/dev/x","clevis":{"tpm2":true,"custom":{"pin":"sss","config":"{}"}}}],
	  "filesystems":[{"device":"/dev/y","format":"xfs","mountOptions":["a","b"]}]},
	  "systemd":{"units":[{"name":"a.service","enabled":true,"dropins":[{"name":"x.conf","contents":"1"}]},{"name":"b.service","mask":true}]},
	  "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1","k2"]}]},"kernelArguments":{"shouldExist":["a"],"shouldNotExist":["b"]}}`,
	`{"ignition":{"version":"3.6.0","config":{"merge":[{"source":"http://a","httpHeaders":[{"name":"X"},{"name":"Z","value":"3"}]}]}},
	  "storage":{"files":[{"path":"/d","contents":{"source":"data:,d"}},{"path":"/a","append":[{"source":"data:,y"}],"mode":384},{"path":"/f"}],
	  "directories":[{"path":"/b"}],"links":[{"path":"/c","target":"/x","hard":true}],
	  "luks":[{"name":"l","clevis":{"tang":[{"url":"http://t"}]}}],
	  "filesystems":[{"device":"/dev/y","mountOptions":["c"]}]},
	  "systemd":{"units":[{"name":"a.service","dropins":[{"name":"x.conf","contents":"2"},{"name":"y.conf"}]},{"name":"c.service","contents":"[Unit]"}]},
	  "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k3"]},{"name":"other"}],"groups":[{"name":"g"}]},"kernelArguments":{"shouldExist":["a","c"]}}`,
	`{"ignition":{"version":"3.6.0"}}`,
	`{"ignition":{"version":"3.6.0"},"storage":{"links":[{"path":"/a","target":"/b"}],"files":[{"path":"/e"}]}}`,
	`{"storage":{"files":[{"path":"/z"}]}}`,
	`{"ignition":{"version":"3.6.0"},"storage":{"files":[],"directories":[{"path":"/q"}]}}`,
}

func decodeConfig(t testing.TB, js string) convert.Config {
	t.Helper()
	var c convert.Config
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// sameMerge fails t unless mergeValues gives what Ignition's merge gives.
func sameMerge(t testing.TB, parent, child convert.Config) {
	t.Helper()
	want, _ := merge.MergeStructTranscribe(parent, child)
	got := mergeValues(reflect.ValueOf(parent), reflect.ValueOf(child)).Interface()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("merge differs from Ignition's:\n got %s\nwant %s", g, w)
	}
}

// mergeValues gives Ignition's merge, on every ordered pair of the edge
// cases and of the MachineConfigs of the test data (with the compression
// fix the renders apply to children), and on every pool's merge order.
func TestMergeValuesIsIgnitions(t *testing.T) {
	for i, p := range mergeEdgeCases {
		for j, c := range mergeEdgeCases {
			parent, child := decodeConfig(t, p), decodeConfig(t, c)
			child.Storage.Files = childCompression(child.Storage.Files)
			t.Run(fmt.Sprintf("edge-%d-%d", i, j), func(t *testing.T) { sameMerge(t, parent, child) })
		}
	}
	dirs := []string{filepath.Join("..", "fixtures", "cluster")}
	for _, d := range [][]string{{"realdata", "aws"}, {"realdata", "none"}, {"mco-testdata", "bootstrap"}} {
		if dir, ok := shareddata.Optional(t, d...); ok {
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			s, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			var cfgs []*entry
			for _, e := range s.entries {
				if e.cfg != nil {
					cfgs = append(cfgs, e)
				}
			}
			for _, p := range cfgs {
				for _, c := range cfgs {
					sameMerge(t, *p.cfg, mergeChild(c))
				}
			}
			var shared mergeCache
			for _, pool := range s.pools {
				var members []*entry
				for _, e := range s.entries {
					if pool.Spec.MachineConfigSelector.matches(e.mc.Metadata.Labels) {
						members = append(members, e)
					}
				}
				order := mergeOrder(members)
				want := libraryMerge(order)
				for _, m := range []*merged{mergeIgnition(order, nil), mergeIgnition(order, &shared)} {
					if !reflect.DeepEqual(m.cfg, want) {
						t.Errorf("pool %s: the merge differs from Ignition's", pool.Metadata.Name)
					}
					if len(m.transcripts()) != len(m.steps) {
						t.Errorf("pool %s: %d transcripts for %d steps", pool.Metadata.Name, len(m.transcripts()), len(m.steps))
					}
				}
			}
		})
	}
}

// libraryMerge is mergeIgnition with Ignition's merge at every step.
func libraryMerge(order []*entry) convert.Config {
	var cfg convert.Config
	base := false
	for _, e := range order {
		switch {
		case e.cfg == nil:
		case !base:
			cfg, base = *e.cfg, true
		default:
			res, _ := merge.MergeStructTranscribe(cfg, mergeChild(e))
			cfg = res.(convert.Config)
		}
	}
	mergedFixes(&cfg)
	return cfg
}

// FuzzMergeValues: any two configs merge as Ignition merges them.
func FuzzMergeValues(f *testing.F) {
	for _, p := range mergeEdgeCases {
		for _, c := range mergeEdgeCases {
			f.Add(p, c)
		}
	}
	f.Fuzz(func(t *testing.T, p, c string) {
		var parent, child convert.Config
		if json.Unmarshal([]byte(p), &parent) != nil || json.Unmarshal([]byte(c), &child) != nil {
			return
		}
		sameMerge(t, parent, child)
	})
}
