package admit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_0"
	"github.com/coreos/ignition/v2/config/v3_1"
	"github.com/coreos/ignition/v2/config/v3_2"
	"github.com/coreos/ignition/v2/config/v3_3"
	"github.com/coreos/ignition/v2/config/v3_4"
	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_6"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

// corpusSize is how many configs TestLowerCorpusReaders generates.
const corpusSize = 20000

// corpusSeed makes the corpus the same on every run.
const corpusSeed = 42

// ignitionRead is Ignition's own config/v3_N.ParseCompatibleVersion for a
// reader of spec v, called directly: the test judges Lower by Ignition's
// code, not by convert.Judge's stepping of it.
func ignitionRead(raw []byte, v convert.Version) (any, error) {
	var c any
	var err error
	switch v {
	case convert.V3_0:
		c, _, err = v3_0.ParseCompatibleVersion(raw)
	case convert.V3_1:
		c, _, err = v3_1.ParseCompatibleVersion(raw)
	case convert.V3_2:
		c, _, err = v3_2.ParseCompatibleVersion(raw)
	case convert.V3_3:
		c, _, err = v3_3.ParseCompatibleVersion(raw)
	case convert.V3_4:
		c, _, err = v3_4.ParseCompatibleVersion(raw)
	case convert.V3_5:
		c, _, err = v3_5.ParseCompatibleVersion(raw)
	case convert.V3_6:
		c, _, err = v3_6.ParseCompatibleVersion(raw)
	default:
		return nil, fmt.Errorf("no reader of spec %s", v)
	}
	return c, err
}

// canonical is a reader's config as JSON that omits what is empty (as
// Ignition's types are written): two readings are the same config when
// these bytes are equal.
func canonical(t testing.TB, c any) []byte {
	t.Helper()
	b, err := convert.Marshal(c, false)
	if err != nil {
		t.Error(err)
	}
	return b
}

// masking is canonical of a reading at spec v of a config of spec from,
// as Ignition v2.15.0 to v2.20.0 read it: their step from 3.3 to 3.4 masks
// the special bits of files' and directories' modes (TestRollbackReaders
// holds this to v2.19.0's own reader).
func masking(t testing.TB, c any, from, v convert.Version) []byte {
	t.Helper()
	b := canonical(t, c)
	if v.Less(convert.V3_4) || !v.Less(convert.V3_6) {
		return b
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Error(err)
		return b
	}
	st, _ := m["storage"].(map[string]any)
	for _, k := range []string{"files", "directories"} {
		list, _ := st[k].([]any)
		for _, n := range list {
			if n, ok := n.(map[string]any); ok {
				if mode, ok := n["mode"].(float64); ok && from.Less(convert.V3_4) {
					n["mode"] = int(mode) &^ 0o7000
				}
			}
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Error(err)
	}
	return out
}

// corpusCase is one generated config and the cluster it is written to.
type corpusCase struct {
	raw            []byte
	ceiling, reads convert.Version
}

// clusters are the (ceiling, reads) pairs the corpus rotates through: a
// 4.18 rollback under a 3.5 operator, no cluster known, a 4.12 rollback,
// no rollback below the operator, and an operator newer than the table.
var clusters = [][2]convert.Version{
	{convert.V3_4, convert.V3_5},
	{{}, {}},
	{convert.V3_2, convert.V3_5},
	{convert.V3_5, convert.V3_5},
	{convert.V3_4, convert.V3_6},
}

// corpusTally counts what the corpus did, for the log and the floor of
// what it must exercise.
type corpusTally struct {
	generated, parsed, lowered, kept, above, lostAbove int
	bySpec                                             map[string]int
	feature                                            map[string]int // lowered configs using each feature
}

func newTally() *corpusTally {
	return &corpusTally{bySpec: map[string]int{}, feature: map[string]int{}}
}

func (c *corpusTally) add(o *corpusTally) {
	c.generated += o.generated
	c.parsed += o.parsed
	c.lowered += o.lowered
	c.kept += o.kept
	c.above += o.above
	c.lostAbove += o.lostAbove
	for k, v := range o.bySpec {
		c.bySpec[k] += v
	}
	for k, v := range o.feature {
		c.feature[k] += v
	}
}

// checkReaders lowers c and requires (t.Error, so that shards may call
// it) of every lowered config what Lower
// promises its readers: Ignition's own parser at each reader's spec (the
// operator's, the rollback's, the input's own) reads the stored bytes as
// it reads the input; a reader that cannot read the input parses them.
// It returns the result, or nil when the config was not lowered.
func checkReaders(t testing.TB, c corpusCase, tally *corpusTally) *Result {
	t.Helper()
	res, err := lower(context.Background(), c.raw, c.ceiling, c.reads, nil)
	if tally != nil {
		tally.generated++
		if !res.Declared.IsZero() && res.Declared.Major == 3 {
			tally.parsed++
		}
		if len(res.Above) > 0 {
			tally.above++
		}
		if len(res.Lost) > 0 {
			tally.lostAbove++
		}
	}
	if !res.Changed() {
		if !bytes.Equal(res.Config, c.raw) {
			t.Errorf("not lowered (%v), yet the bytes changed", err)
			return nil
		}
		if tally != nil && err == nil && res.Declared.Major == 3 {
			tally.kept++
		}
		return nil
	}
	if err != nil {
		t.Errorf("lowered with an error: %v", err)
		return nil
	}
	checkLoweringPatches(t, c.raw, res)
	if !readersAgree(t, c, res) {
		return nil
	}
	if tally != nil {
		tally.lowered++
		tally.bySpec[res.Declared.String()+"→"+res.Stored.String()]++
		for _, f := range corpusFeatures {
			if bytes.Contains(c.raw, []byte(`"`+f+`"`)) {
				tally.feature[f]++
			}
		}
	}
	return res
}

// readersAgree requires (t.Error) of res, c lowered, what Lower promises
// its readers: Ignition's own parser at each reader's spec (the
// operator's, the rollback's, the input's own) reads the stored bytes as
// it reads the input; a reader that cannot read the input parses them.
func readersAgree(t testing.TB, c corpusCase, res *Result) bool {
	t.Helper()
	reads := c.reads
	if reads.IsZero() {
		reads = convert.V3_5
	}
	var asked []convert.Version
	for _, v := range []convert.Version{reads, c.ceiling, res.Declared} {
		if v.IsZero() || v.Less(res.Stored) || slices.Contains(asked, v) {
			continue
		}
		asked = append(asked, v)
		got, err := ignitionRead(res.Config, v)
		if err != nil {
			t.Errorf("Ignition's reader of spec %s refuses the config stored at %s: %v\nsent:   %s\nstored: %s", v, res.Stored, err, c.raw, res.Config)
			return false
		}
		if v.Less(res.Declared) {
			continue // it cannot read what was sent: parsing what is stored is all it can do
		}
		want, err := ignitionRead(c.raw, v)
		if err != nil {
			t.Errorf("Ignition's reader of spec %s refuses the config sent at %s: %v\n%s", v, res.Declared, err, c.raw)
			return false
		}
		if a, b := canonical(t, want), canonical(t, got); !bytes.Equal(a, b) {
			t.Errorf("Ignition's reader of spec %s reads the config stored at %s otherwise than the one sent at %s\nsent:   %s\nstored: %s\nreads:  %s\nnot:    %s",
				v, res.Stored, res.Declared, c.raw, res.Config, b, a)
			return false
		}
		// The same reader with the Ignition of OpenShift 4.14 to 4.22.
		if a, b := masking(t, want, res.Declared, v), masking(t, got, res.Stored, v); !bytes.Equal(a, b) {
			t.Errorf("Ignition v2.15.0-v2.20.0's reader of spec %s reads the config stored at %s otherwise than the one sent at %s\nsent:   %s\nstored: %s\nreads:  %s\nnot:    %s",
				v, res.Stored, res.Declared, c.raw, res.Config, b, a)
			return false
		}
	}
	return true
}

// corpusFeatures are the keys whose lowering the corpus must exercise.
var corpusFeatures = []string{"tang", "advertisement", "tpm2", "custom", "cex", "discard", "openOptions", "kernelArguments", "links", "append", "overwrite", "users", "shouldExist", "dropins", "mountOptions", "proxy", "merge", "resize"}

// corpus is n generated configs with the clusters they are written to.
func corpus(n int) []corpusCase {
	r := rand.New(rand.NewPCG(corpusSeed, corpusSeed))
	out := make([]corpusCase, n)
	for i := range out {
		data := make([]byte, 48+r.IntN(208))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		cl := clusters[i%len(clusters)]
		out[i] = corpusCase{raw: generateConfig(data), ceiling: cl[0], reads: cl[1]}
	}
	return out
}

// FuzzLowerReaders is TestLowerCorpusReaders's check as a differential
// fuzz target: the bytes pick the config (see generateConfig) and the
// cluster.
func FuzzLowerReaders(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 128 {
		data := make([]byte, 48+r.IntN(208))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		f.Add(data, uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, cluster uint8) {
		cl := clusters[int(cluster)%len(clusters)]
		checkReaders(t, corpusCase{raw: generateConfig(data), ceiling: cl[0], reads: cl[1]}, nil)
	})
}

// gen builds a config's JSON from bytes: each byte picks whether a member
// is there, null, or empty, and which of a few telling values it holds.
type gen struct {
	data []byte
	i    int
	spec convert.Version
}

func (g *gen) next() int {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return int(g.data[g.i-1])
}

func (g *gen) chance(n int) bool          { return g.next()%n == 0 }
func (g *gen) pick(pool ...any) any       { return pool[g.next()%len(pool)] }
func (g *gen) has(v convert.Version) bool { return !g.spec.Less(v) }

// obj is a JSON object being built: members are set in the order written.
type obj map[string]any

// set sets k to v, or (rarely) to null instead, which Ignition reads as
// unset.
func (g *gen) set(o obj, k string, v any) {
	if g.chance(12) {
		o[k] = nil
		return
	}
	o[k] = v
}

// list is n elements made by each, or (rarely) an empty list or null.
func (g *gen) list(each func(i int) any) any {
	switch g.next() % 10 {
	case 0:
		return []any{}
	case 1:
		return nil
	}
	n := 1 + g.next()%2
	out := make([]any, n)
	for i := range out {
		out[i] = each(i)
	}
	return out
}

var (
	genPaths   = []any{"/etc/a", "/etc/b.conf", "/var/lib/c", "/usr/local/bin/x", "/etc/a.d", "/srv/y"}
	genSources = []any{"data:,x", "data:,", "data:;base64,aGk=", "https://example.com/a", "gs://b/o", "arn:aws:s3:::b/k", "s3://b/k"}
	genHashes  = []any{"sha512-" + strings.Repeat("0", 128), "sha256-" + strings.Repeat("0", 64)}
	genModes   = []any{0o644, 0o755, 0o600, 0o4755, 0o2755, 0o1777, 0o6711}
	genAdverts = []any{`{"payload":"eyJrZXlzIjpbXX0","protected":"eyJhbGciOiJFUzUxMiJ9","signature":"c2ln"}`, "{}"}
)

// generateConfig is a spec-3 config of the spec data's first byte picks,
// with only the members that spec has (a few configs fail to validate, as
// written by hand would).
func generateConfig(data []byte) []byte {
	g := &gen{data: data}
	specs := convert.OutputVersions[1:] // spec 3 only
	g.spec = specs[g.next()%len(specs)]
	cfg := obj{"ignition": g.ignition()}
	// One section, sometimes two: small configs, many of them.
	sections := 1 << (g.next() % 4)
	if g.chance(4) {
		sections |= 1 << (g.next() % 4)
	}
	if sections&1 != 0 {
		g.set(cfg, "storage", g.storage())
	}
	if sections&2 != 0 {
		g.set(cfg, "passwd", g.passwd())
	}
	if sections&4 != 0 {
		g.set(cfg, "systemd", obj{"units": g.list(g.unit)})
	}
	if sections&8 != 0 && g.has(convert.V3_3) {
		g.set(cfg, "kernelArguments", g.kernelArguments())
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

func (g *gen) ignition() obj {
	ign := obj{"version": g.spec.String()}
	if g.chance(8) {
		ref := obj{"source": g.pick(genSources...)}
		if g.chance(2) {
			ref["verification"] = obj{"hash": g.pick(genHashes...)}
		}
		if g.has(convert.V3_1) && g.chance(3) {
			g.set(ref, "httpHeaders", []any{obj{"name": "X", "value": "v"}})
		}
		ign["config"] = obj{"merge": []any{ref}}
	}
	if g.chance(8) {
		ign["security"] = obj{"tls": obj{"certificateAuthorities": []any{obj{"source": "data:,ca"}}}}
	}
	if g.has(convert.V3_1) && g.chance(8) {
		g.set(ign, "proxy", obj{"httpProxy": "http://p:3128", "noProxy": g.list(func(int) any { return "example.com" })})
	}
	return ign
}

func (g *gen) storage() obj {
	s := obj{}
	if g.chance(2) {
		g.set(s, "files", g.list(g.file))
	}
	if g.chance(3) {
		g.set(s, "directories", g.list(func(i int) any {
			d := obj{"path": fmt.Sprintf("/var/d%d", i)}
			g.set(d, "mode", g.pick(genModes...))
			g.set(d, "overwrite", g.chance(2))
			return d
		}))
	}
	if g.chance(3) {
		g.set(s, "links", g.list(func(i int) any {
			l := obj{"path": fmt.Sprintf("/etc/l%d", i), "target": g.pick("/etc/a", "../b")}
			g.set(l, "hard", false)
			g.set(l, "overwrite", g.chance(2))
			return l
		}))
	}
	if g.has(convert.V3_2) && g.chance(3) {
		g.set(s, "luks", g.list(g.luks))
	}
	if g.chance(6) {
		fs := obj{"device": "/dev/vdc", "format": g.pick("xfs", "ext4", "none"), "path": "/var/srv"}
		if g.has(convert.V3_1) && g.chance(2) {
			g.set(fs, "mountOptions", []any{"noatime"})
		}
		s["filesystems"] = []any{fs}
	}
	if g.chance(8) {
		p := obj{"label": "x", "number": 1}
		if g.has(convert.V3_2) && g.chance(2) {
			g.set(p, "resize", true)
		}
		s["disks"] = []any{obj{"device": "/dev/vdd", "partitions": []any{p}}}
	}
	return s
}

func (g *gen) file(i int) any {
	f := obj{"path": genPaths[(g.next()+i)%len(genPaths)]}
	g.set(f, "mode", g.pick(genModes...))
	g.set(f, "overwrite", g.chance(2))
	if g.chance(3) {
		c := obj{"source": g.pick(genSources...)}
		if g.chance(4) {
			g.set(c, "compression", g.pick("", "gzip"))
		}
		if g.chance(3) {
			c["verification"] = obj{"hash": g.pick(genHashes...)}
		}
		g.set(f, "contents", c)
	}
	if g.chance(3) {
		g.set(f, "append", g.list(func(int) any { return obj{"source": g.pick("data:,more", "data:,")} }))
	}
	if g.chance(4) {
		g.set(f, "user", g.pick(obj{"id": 0}, obj{"name": "core"}))
	}
	return f
}

func (g *gen) luks(i int) any {
	l := obj{"name": fmt.Sprintf("v%d", i), "device": fmt.Sprintf("/dev/vd%c", 'b'+i)}
	clevis := obj{}
	if g.chance(2) {
		t := obj{"url": "http://tang.example.com", "thumbprint": "tp"}
		if g.has(convert.V3_4) && g.chance(2) {
			g.set(t, "advertisement", g.pick(genAdverts...))
		}
		clevis["tang"] = []any{t}
	}
	if g.chance(3) {
		g.set(clevis, "tpm2", true)
	}
	if g.chance(4) {
		g.set(clevis, "threshold", 1)
	}
	if g.chance(5) {
		clevis["custom"] = obj{"pin": g.pick("tpm2", "tang", "sss"), "config": "{}"}
	}
	switch {
	case g.has(convert.V3_5) && g.chance(4):
		g.set(l, "cex", obj{"enabled": true})
	case len(clevis) > 0:
		g.set(l, "clevis", clevis)
	default:
		l["keyFile"] = obj{"source": "data:,key"}
	}
	if g.has(convert.V3_4) && g.chance(3) {
		g.set(l, "discard", g.chance(2))
	}
	if g.has(convert.V3_4) && g.chance(3) {
		g.set(l, "openOptions", g.list(func(int) any { return "--allow-discards" }))
	}
	if g.chance(3) {
		g.set(l, "wipeVolume", true)
	}
	return l
}

func (g *gen) passwd() obj {
	p := obj{}
	p["users"] = g.list(func(i int) any {
		u := obj{"name": g.pick("core", "alice", "bob")}
		if g.chance(2) {
			g.set(u, "sshAuthorizedKeys", g.list(func(int) any { return "ssh-ed25519 AAAA k" }))
		}
		if g.has(convert.V3_2) && g.chance(3) {
			g.set(u, "shouldExist", g.chance(2))
		}
		if g.chance(4) {
			g.set(u, "uid", 1001+i)
		}
		if g.chance(4) {
			g.set(u, "groups", []any{"wheel"})
		}
		return u
	})
	if g.chance(3) {
		grp := obj{"name": "g"}
		if g.has(convert.V3_2) && g.chance(2) {
			g.set(grp, "shouldExist", true)
		}
		p["groups"] = []any{grp}
	}
	return p
}

func (g *gen) unit(i int) any {
	u := obj{"name": fmt.Sprintf("u%d.service", i)}
	if g.chance(2) {
		g.set(u, "contents", "[Unit]\n")
	}
	if g.chance(2) {
		g.set(u, "enabled", g.chance(2))
	}
	if g.chance(5) {
		g.set(u, "mask", g.chance(2))
	}
	if g.chance(2) {
		g.set(u, "dropins", g.list(func(j int) any {
			d := obj{"name": fmt.Sprintf("%d-x.conf", j)}
			g.set(d, "contents", "[Service]\n")
			return d
		}))
	}
	return u
}

func (g *gen) kernelArguments() obj {
	k := obj{}
	if g.chance(2) {
		g.set(k, "shouldExist", g.list(func(int) any { return g.pick("nosmt", "quiet") }))
	}
	if g.chance(2) {
		g.set(k, "shouldNotExist", g.list(func(int) any { return "mitigations=off" }))
	}
	return k
}

// TestRollbackReaders: the rollback readers `make rollback-reader` builds
// (Ignition v2.10.1 reading at 3.2, as OpenShift 4.7 to 4.12; v2.19.0 at
// 3.4, as 4.14 to 4.18) read every config Lower stores of a sample of the
// corpus (every rollbackSample-th, 1,000 configs) as the in-process check says they do:
// they parse exactly those it says they parse, into the same config.
func TestRollbackReaders(t *testing.T) {
	const rollbackSample = 20
	readers := map[string]convert.Version{"v2.10.1": convert.V3_2, "v2.19.0": convert.V3_4}
	bins := map[string]string{}
	for version := range readers {
		bins[version] = testkit.RollbackReader(t, version)
	}
	stored := map[string][]byte{}
	for i, c := range corpus(corpusSize) {
		if i%rollbackSample != 0 {
			continue
		}
		res, _ := lower(context.Background(), c.raw, c.ceiling, c.reads, nil)
		stored[fmt.Sprint(i)] = res.Config
	}
	for version, spec := range readers {
		parsed, agreed := 0, 0
		for name, r := range testkit.ReaderReadings(t, bins[version], stored) {
			cfg := stored[name]
			in, err := ignitionRead(cfg, spec)
			if (err == nil) != (r.Error == "") {
				t.Errorf("%s: config %s: the reader says %q, in process %v\n%s", version, name, r.Error, err, cfg)
				continue
			}
			if err != nil {
				continue
			}
			parsed++
			from, _ := convert.ParseVersion(declaredOf(cfg))
			want := canonicalStd(t, in)
			if spec == convert.V3_4 {
				want = canonicalStd(t, json.RawMessage(masking(t, in, from, spec)))
			}
			if got := canonicalStd(t, r.Config); !bytes.Equal(got, want) {
				t.Errorf("%s: config %s read otherwise than in process\nstored:     %s\nreader:     %s\nin process: %s", version, name, cfg, got, want)
				continue
			}
			agreed++
		}
		t.Logf("Ignition %s (spec %s): %d of %d stored configs parsed, each read as in process: %d", version, spec, parsed, len(stored), agreed)
		if parsed < len(stored)/4 {
			t.Errorf("%s parsed only %d of %d", version, parsed, len(stored))
		}
	}
}

// canonicalStd is v as JSON without what is empty, keys sorted: the
// rollback readers write their types with encoding/json, which writes
// empty structs.
func canonicalStd(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Error(err)
		return nil
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Error(err)
		return nil
	}
	out, _ := json.Marshal(prune(m))
	return out
}

// prune drops empty objects, empty lists and nulls, as omitempty writers
// leave them out.
func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x = prune(x); x == nil {
				delete(v, k)
			} else {
				v[k] = x
			}
		}
		if len(v) == 0 {
			return nil
		}
	case []any:
		for i := range v {
			if x := prune(v[i]); x != nil {
				v[i] = x
			} else {
				v[i] = map[string]any{}
			}
		}
		if len(v) == 0 {
			return nil
		}
	}
	return v
}

// declaredOf is the version a config declares, "" when none.
func declaredOf(raw []byte) string {
	var stub struct {
		Ignition struct{ Version string }
	}
	_ = json.Unmarshal(raw, &stub)
	return stub.Ignition.Version
}
