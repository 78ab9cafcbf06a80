package convert

import (
	"bytes"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
)

func TestEncodeSegments(t *testing.T) {
	big := "data:," + strings.Repeat("a", 2*minPlaceholder)
	other := "data:;base64," + strings.Repeat("QUJD", minPlaceholder)
	for _, tc := range []struct {
		name    string
		sources []string
		pieces  int
	}{
		{"no large contents", []string{"data:,small"}, 1},
		{"one large content", []string{big}, 3},
		{"the same content twice", []string{big, "data:,small", big}, 5},
		{"two contents", []string{big, other}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			cfg.Ignition.Version = "3.6.0"
			for i, src := range tc.sources {
				src := src
				cfg.Storage.Files = append(cfg.Storage.Files, types.File{
					Node:          types.Node{Path: "/etc/f" + string(rune('a'+i))},
					FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}},
				})
			}
			enc := NewEncoder(cfg, false)
			for _, v := range OutputVersions {
				want, werr := Encode(&cfg, v, false)
				segs, err := enc.EncodeSegments(v, nil)
				if (err != nil) != (werr != nil) {
					t.Fatalf("%s: error %v, want %v", v, err, werr)
				}
				if err != nil {
					continue
				}
				if got := bytes.Join(segs, nil); !bytes.Equal(got, want) {
					t.Fatalf("%s: pieces join to\n%s\nwant\n%s", v, got, want)
				}
				if len(segs) != tc.pieces {
					t.Fatalf("%s: %d pieces, want %d", v, len(segs), tc.pieces)
				}
				again, _ := enc.EncodeSegments(v, nil)
				for i := 1; i < len(segs); i += 2 {
					if &segs[i][0] != &again[i][0] {
						t.Fatalf("%s: content piece %d not shared between calls", v, i)
					}
				}
			}
		})
	}
}

func TestShareContents(t *testing.T) {
	big := "data:," + strings.Repeat("b", 2*minPlaceholder)
	var cfg Config
	cfg.Ignition.Version = "3.6.0"
	cfg.Storage.Files = []types.File{{Node: types.Node{Path: "/etc/b"}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &big}}}}
	held := []byte(`"` + big)
	enc := NewEncoder(cfg, false).ShareContents(func(b []byte) []byte {
		if !bytes.Equal(b, held) {
			t.Fatalf("asked to intern %.40q", b)
		}
		return held
	})
	segs, err := enc.EncodeSegments(V3_4, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Encode(&cfg, V3_4, false)
	if len(segs) != 3 || &segs[1][0] != &held[0] || !bytes.Equal(bytes.Join(segs, nil), want) {
		t.Fatalf("%d pieces; the content is not the shared copy, or the bytes differ", len(segs))
	}
}
