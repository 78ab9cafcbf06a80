package admit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
)

// heldSources are data URLs and other sources the held cases put in files:
// valid and invalid data URLs (Ignition refuses "data:%" and a bad
// base64), with escapes and non-ASCII text (never held), the same content
// twice, and URLs that are not data URLs.
var heldSources = []string{
	"data:,x", "data:,", "data:;base64,aGk=", "data:;base64,!!", "data:%", "data:text/plain,a%20b",
	`data:,a\u0026b`, "data:,h\u00e9", `data:,q\"x`, "data:,<&>",
	"https://example.com/a", "DATA:,upper", "data:,mcsph-0",
}

// sameLowering fails unless a and b are the same answer: the same bytes,
// specs, reasons, losses and error.
func sameLowering(t *testing.T, what string, raw []byte, a, b *Result, errA, errB error) {
	t.Helper()
	if fmt.Sprint(errA) != fmt.Sprint(errB) || reflect.TypeOf(errA) != reflect.TypeOf(errB) {
		t.Fatalf("%s: held: %v\nas is: %v\nconfig: %s", what, errA, errB, raw)
	}
	if !bytes.Equal(a.Config, b.Config) {
		t.Fatalf("%s: held wrote\n%s\nas is wrote\n%s\nconfig: %s", what, a.Config, b.Config, raw)
	}
	ca, cb := *a, *b
	ca.Config, cb.Config = nil, nil
	if !reflect.DeepEqual(fmt.Sprintf("%+v", ca), fmt.Sprintf("%+v", cb)) {
		t.Fatalf("%s: held %+v\nas is %+v\nconfig: %s", what, ca, cb, raw)
	}
}

// heldCase is one config lowered with every data URL held (min 1) and as
// it is, under cluster cl.
func heldCase(t *testing.T, what string, raw []byte, cl [2]convert.Version, valid *convert.ValidItems) {
	t.Helper()
	ctx := context.Background()
	a, errA := lowerHolding(ctx, raw, cl[0], cl[1], valid, 1)
	b, errB := lowerAsIs(ctx, raw, cl[0], cl[1], nil)
	sameLowering(t, what, raw, a, b, errA, errB)
	if errA == nil && a.Changed() {
		readersAgree(t, corpusCase{raw: raw, ceiling: cl[0], reads: cl[1]}, a)
	}
}

// withHeldSources is raw with its files' sources replaced, in turn, by
// heldSources picked by r, and some of its files' contents repeated.
func withHeldSources(raw []byte, r *rand.Rand) []byte {
	s := string(raw)
	for _, src := range []string{"data:,x", "data:,more", "data:;base64,aGk="} {
		for strings.Contains(s, `"`+src+`"`) {
			pick := heldSources[r.IntN(len(heldSources))]
			if r.IntN(4) == 0 {
				pick = "data:," + strings.Repeat("ab", 1+r.IntN(400))
			}
			s = strings.Replace(s, `"`+src+`"`, `"`+pick+`"`, 1)
		}
	}
	return []byte(s)
}

// withHeldFile is raw, when a JSON object, with one more file whose
// contents' source is picked from heldSources (or a large data URL) by r.
func withHeldFile(raw []byte, r *rand.Rand) []byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var cfg map[string]any
	if d.Decode(&cfg) != nil || cfg == nil {
		return raw
	}
	storage, _ := cfg["storage"].(map[string]any)
	if storage == nil {
		storage = map[string]any{}
		cfg["storage"] = storage
	}
	files, _ := storage["files"].([]any)
	src := heldSources[r.IntN(len(heldSources))]
	if r.IntN(2) == 0 {
		src = "data:," + strings.Repeat("cd", 1+r.IntN(600))
	}
	file := map[string]any{"path": fmt.Sprintf("/etc/held-%d", r.IntN(3)), "contents": map[string]any{"source": src}}
	if r.IntN(3) == 0 {
		file["mode"] = []int{0o644, 0o4755, 0o1777}[r.IntN(3)]
	}
	storage["files"] = append(files, file)
	var out bytes.Buffer
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(false)
	if e.Encode(cfg) != nil {
		return raw
	}
	return bytes.TrimSpace(out.Bytes())
}

// TestLowerHeldIsLower holds every data URL out of the configs a review
// lowers (convert.Hold, from one byte up) and requires the same answer as
// lowering them as they are, byte for byte: the generated corpus under
// each cluster, its sources varied (invalid, escaped, non-ASCII, repeated,
// large), OpenShift's rendered configs of realdata, and hand-written edge
// cases. One ValidItems is shared throughout, as reviews share it.
func TestLowerHeldIsLower(t *testing.T) {
	valid := &convert.ValidItems{}
	r := rand.New(rand.NewPCG(7, 7))
	n := 2000
	if testing.Short() {
		n = 300
	}
	held := 0
	for i, c := range corpus(n) {
		raw := withHeldSources(c.raw, r)
		if i%2 == 0 {
			raw = withHeldFile(raw, r)
		}
		if _, ok := convert.Hold(raw, nil, 1); ok {
			held++
		}
		heldCase(t, fmt.Sprintf("corpus %d", i), raw, [2]convert.Version{c.ceiling, c.reads}, valid)
	}
	t.Logf("%d of %d configs held a data URL", held, n)
	if held < n/3 {
		t.Errorf("only %d of %d configs held anything", held, n)
	}
	for _, set := range []string{"aws", "none"} {
		for _, pool := range []string{"master", "worker"} {
			r, _ := servetest.OpenShiftRendered(t, servetest.Load(t, shareddata.Path(t, "realdata", set)), pool)
			raw := r.MachineConfig.Spec.Config
			if _, ok := convert.Hold(raw, nil, convert.MinHeld); !ok {
				t.Fatalf("realdata/%s %s: nothing held", set, pool)
			}
			for _, cl := range clusters {
				heldCase(t, "realdata/"+set+"/"+pool, raw, cl, valid)
			}
		}
	}
	for _, raw := range []string{
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}},{"path":"/a","contents":{"source":"data:,b"}}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","append":[{"source":"data:,a"},{"source":"data:,a"}]}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"},"contents":{"source":"data:,b"}}]},"storage":{"files":[{"path":"/b","contents":{"source":"data:,c"}}]}}`,
		`{"ignition":{"version":"3.5.0"},"Storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}}]},"storage":{"Files":[{"path":"/b","Contents":{"Source":"data:,b"}}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a","httpHeaders":[{"name":"a","value":"b"}]}}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a","verification":{"hash":"sha512-00"}}}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a","unknown":1}}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}}],"links":[{"path":"/a","target":"/b"}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}}]},"systemd":{"units":[{"name":"a.service","contents":"data:,a"}]}}`,
		`{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["data:,a"]}]},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}}]}} trailing`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a\x"}}]}}`,
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}}],"luks":[{"name":"l","device":"/dev/a","clevis":{"tang":[{"url":"http://t","thumbprint":"x","advertisement":"{}"}]}}]}}`,
		`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/a","mode":2541,"contents":{"source":"data:,a"}}]}}`,
		`{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/a","contents":{"source":null}}]}}`,
		`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,a"}}]}}`,
		`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/a","contents":{"source":"data:,a"}}]}}`,
	} {
		for _, cl := range clusters {
			heldCase(t, raw, []byte(raw), cl, valid)
		}
	}
}

// FuzzLowerHeld is TestLowerHeldIsLower's check on configs generated from
// the fuzzer's bytes (see generateConfig), their sources varied.
func FuzzLowerHeld(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint64(1))
	f.Add([]byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6}, uint8(1), uint64(2))
	f.Fuzz(func(t *testing.T, data []byte, cluster uint8, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed))
		raw := withHeldSources(generateConfig(data), r)
		if seed%2 == 0 {
			raw = withHeldFile(raw, r)
		}
		heldCase(t, "fuzz", raw, clusters[int(cluster)%len(clusters)], nil)
	})
}

// TestLowerHeldWhileForgetting: reviews share one ValidItems, and each
// lowering ends with a Forget past its bound; one running beside another
// review's Forget must still store each file's own contents.
func TestLowerHeldWhileForgetting(t *testing.T) {
	raw := []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[` +
		`{"path":"/a","contents":{"source":"data:,` + strings.Repeat("A", 4000) + `"}},` +
		`{"path":"/b","contents":{"source":"data:,` + strings.Repeat("B", 4000) + `"}}]}}`)
	want, err := lowerAsIs(context.Background(), raw, convert.V3_4, convert.V3_5, nil)
	if err != nil || !want.Changed() {
		t.Fatalf("as is: %v, changed %v", err, want.Changed())
	}
	valid := &convert.ValidItems{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				valid.Forget(0)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for i := range 300 {
		got, err := lowerHolding(context.Background(), raw, convert.V3_4, convert.V3_5, valid, convert.MinHeld)
		if err != nil || !bytes.Equal(got.Config, want.Config) {
			t.Fatalf("run %d: %v\n%.200s", i, err, got.Config)
		}
	}
}
