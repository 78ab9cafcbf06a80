package convert

import (
	"maps"
	"strconv"
	"strings"
	"testing"
)

// Specs before 3.6 read special mode bits and ignore them: Parse masks them
// in the internal config and records them as written, and a translation to
// a spec before 3.6 writes them back, to 3.6 never.
func TestWrittenModes(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		written WrittenModes
	}{
		{"3.5 sticky", `{"ignition":{"version":"3.5.0"},"storage":{"directories":[{"path":"/a","mode":493},{"path":"/tmp/x","mode":1023}]}}`, WrittenModes{"/tmp/x": 0o1777}},
		{"3.0 setgid", `{"ignition":{"version":"3.0.0"},"storage":{"directories":[{"path":"/srv","mode":1533}]}}`, WrittenModes{"/srv": 0o2775}},
		{"2.2 setgid", `{"ignition":{"version":"2.2.0"},"storage":{"directories":[{"filesystem":"root","path":"/srv","mode":1533}]}}`, WrittenModes{"/srv": 0o2775}},
		{"3.6 applies them", `{"ignition":{"version":"3.6.0"},"storage":{"directories":[{"path":"/tmp/x","mode":1023}]}}`, nil},
		{"no bits", `{"ignition":{"version":"3.5.0"},"storage":{"directories":[{"path":"/tmp/x","mode":511}]}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.name, []byte(tc.raw))
			if !maps.Equal(p.WrittenModes, tc.written) {
				t.Fatalf("written modes %v, want %v", p.WrittenModes, tc.written)
			}
			for path, m := range tc.written {
				for _, d := range p.Config.Storage.Directories {
					if d.Path == path && *d.Mode != m&^0o7000 {
						t.Errorf("internal mode of %s %#o, want %#o", path, *d.Mode, m&^0o7000)
					}
				}
			}
			for _, v := range OutputVersions {
				enc, err := NewEncoder(p.Config, false).Written(p.WrittenModes).Encode(v, nil)
				if err != nil {
					// Only a 3.6 config's bits need 3.6.
					if p.Version != V3_6 || v == V3_6 {
						t.Errorf("at %s: %v", v, err)
					}
					continue
				}
				out := enc.JSON
				for path, m := range tc.written {
					want := `"mode":` + strconv.Itoa(m)
					if v == V3_6 {
						want = `"mode":` + strconv.Itoa(m&^0o7000)
					}
					if !strings.Contains(string(out), want) {
						t.Errorf("%s at %s: %s, want %s", path, v, out, want)
					}
				}
			}
		})
	}
}

// A mode the merge changed since is left alone.
func TestWrittenModesOnlyWhereTheModeAgrees(t *testing.T) {
	p := mustParse(t, "3.5", []byte(`{"ignition":{"version":"3.5.0"},"storage":{"directories":[{"path":"/tmp/x","mode":493}]}}`))
	enc, err := NewEncoder(p.Config, false).Written(WrittenModes{"/tmp/x": 0o1777}).Encode(V3_5, nil)
	if err != nil || !strings.Contains(string(enc.JSON), `"mode":493`) {
		t.Fatalf("%v (%v), want mode 493", enc, err)
	}
}
