package convert

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/validate"
)

// fuzzSeeds are the fixtures small enough for the fuzzer to mutate usefully,
// and a few inputs that reach the error paths.
func fuzzSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, fx := range fixtures(f) {
		if len(fx.raw) < 16<<10 {
			out = append(out, fx.raw)
		}
	}
	return append(out,
		[]byte(`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/a","contents":{"source":"data:,a"},"append":true}]}}`),
		[]byte(`{"ignition":{"version":"3.2.0"},"kernelArguments":{"shouldExist":["a"]}}`),
		[]byte(`{"ignition":{"version":"3.7.0-experimental"}}`),
		[]byte("variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n  - path: /a\n    mode: 0644\n"),
		[]byte("{\n  \"ignition\": {\"version\": \"3.2.0\",}\n}"),
		[]byte("- a\n- b\n"),
	)
}

// typedErr reports whether err is one of the errors Parse and translate promise.
func typedErr(err error) bool {
	var (
		uv *UnsupportedVersionError
		se *SyntaxError
		ie *InvalidError
		ce *CannotExpressError
		le *lossError
	)
	return errors.As(err, &uv) || errors.As(err, &se) || errors.As(err, &ie) || errors.As(err, &ce) || errors.As(err, &le)
}

// Parse never panics, fails only with its typed errors, and what it accepts
// survives being written in the newest spec and read again.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := Parse(raw)
		if err != nil {
			if !typedErr(err) {
				t.Fatalf("Parse error %T is untyped: %v", err, err)
			}
			return
		}
		if v, _ := minVersion(&p.Config); Newest.Less(v) || v.Less(V3_0) {
			t.Fatalf("MinVersion = %s", v)
		}
		out, err := Encode(&p.Config, Newest, false)
		if err != nil {
			if !typedErr(err) {
				t.Fatalf("Encode error %T is untyped: %v", err, err)
			}
			return
		}
		q, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Encode(Parse(x))): %v\n%s", err, out)
		}
		if d := diff(normalVersion(p.Config), normalVersion(q.Config)); len(d) > 0 {
			t.Fatalf("re-parsed config differs: %v", d)
		}
	})
}

// translate never panics and either fails, with a typed error that agrees
// with MinVersion, or writes a config that reads back as its input.
func FuzzTranslate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		for i := range OutputVersions {
			f.Add(s, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, target uint8) {
		p, err := Parse(raw)
		if err != nil {
			return
		}
		v := OutputVersions[int(target)%len(OutputVersions)]
		_, reasons := minVersion(&p.Config)
		blocked := ReasonsAbove(reasons, v)
		if v == V2_2 {
			blocked = append(blocked, spec2Blockers(&p.Config)...)
		}
		typed, err := translateTo(&p.Config, v)
		var ce *CannotExpressError
		switch {
		case err == nil && len(blocked) > 0:
			t.Fatalf("translateTo %s succeeded although %v", v, blocked)
		case errors.As(err, &ce) && len(ce.Reasons) != len(blocked):
			t.Fatalf("CannotExpressError lists %v, MinVersion %v", ce.Reasons, blocked)
		case err != nil && ce == nil && len(blocked) > 0:
			t.Fatalf("translateTo %s: %v, want a CannotExpressError for %v", v, err, blocked)
		case err != nil:
			if !typedErr(err) {
				t.Fatalf("translate error %T is untyped: %v", err, err)
			}
			return
		}
		readsBack(t, typed, p.Config, v, false)
	})
}

// readsBack checks that typed, what translate wrote from cfg at spec v,
// declares v and parses back to cfg, written compact or pretty.
func readsBack(t *testing.T, typed any, cfg Config, v Version, pretty bool) {
	t.Helper()
	out, err := Marshal(typed, pretty)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(out)
	if err != nil {
		t.Fatalf("output of translateTo %s does not parse: %v\n%s", v, err, out)
	}
	if q.Version != v {
		t.Fatalf("output declares %s, want %s", q.Version, v)
	}
	want, got := normalVersion(cfg), normalVersion(q.Config)
	if v == V2_2 {
		want, got = spec2Equivalent(want), spec2Equivalent(got)
	}
	if d := diff(want, got); len(d) > 0 {
		t.Fatalf("output of translateTo %s reads back different: %v\n%s", v, d, out)
	}
}

// generator builds a config from fuzz bytes: each byte picks whether a field
// is set and which of a few telling values it holds (paths on and off a
// mounted filesystem, every URL scheme, both hash kinds, special mode bits,
// every Clevis pin), so that the fuzzer explores meaning rather than syntax.
type generator struct {
	data []byte
	i    int
}

func (g *generator) next() int {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return int(g.data[g.i-1])
}

func (g *generator) pick(pool ...string) string { return pool[g.next()%len(pool)] }

var generatedStrings = map[string][]string{
	"path":          {"/etc/a", "/var/lib/b", "/varlib/c", "/var", "/etc/a.d", "/srv/x"},
	"source":        {"data:,x", "data:,", "https://example.com/a", "gs://b/o", "GS://b/o", "arn:aws:s3:::b/k", "s3://b/k", "tftp://h/f"},
	"hash":          {"sha512-" + strings.Repeat("0", 128), "sha256-" + strings.Repeat("0", 64)},
	"compression":   {"", "gzip"},
	"format":        {"xfs", "ext4", "none", "swap", "vfat", ""},
	"device":        {"/dev/vdb", "/dev/vdc", "/dev/disk/by-label/x"},
	"target":        {"/etc/a", "../b", ""},
	"pin":           {"tpm2", "tang", "sss", "fido2", ""},
	"config":        {"{}", ""},
	"advertisement": {"{}", "not json"},
	"url":           {"http://tang.example.com"},
	"level":         {"raid1", "raid0"},
	"name":          {"a", "b", "core", "a.service", "b.service", "10-x.conf"},
	"label":         {"x", ""},
	"typeGuid":      {"0FC63DAF-8483-4772-8E79-3D69D8477DE4", ""},
	"guid":          {"", "5C5B4F84-0BA4-4F0B-8B6E-0F8E5E3F7F3A"},
	"httpProxy":     {"http://p:3128"},
	"httpsProxy":    {"http://p:3128"},
	"contents":      {"", "[Unit]\n"},
	"value":         {"v", ""},
}

var generatedInts = map[string][]int{
	"mode":      {0o644, 0o755, 0o600, 0o4755, 0o2755, 0o1777},
	"sizeMiB":   {0, 1},
	"startMiB":  {0, 1},
	"number":    {0, 1, 2},
	"threshold": {1, 2},
	"uid":       {0, 1000},
	"gid":       {0, 1000},
	"id":        {0, 1000},
}

func (g *generator) fill(v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.Ptr:
		// Sparse configs: most of what a full one holds is invalid together.
		if g.next()%3 != 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		g.fill(v.Elem(), name)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Name == "Version" {
				continue
			}
			g.fill(v.Field(i), jsonName(f))
		}
	case reflect.Slice:
		n := [8]int{0, 0, 0, 0, 0, 1, 1, 2}[g.next()%8]
		if n == 0 {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := 0; i < n; i++ {
			g.fill(v.Index(i), name)
		}
	case reflect.String:
		if pool, ok := generatedStrings[name]; ok {
			v.SetString(g.pick(pool...))
		} else {
			v.SetString(g.pick("x", "y"))
		}
	case reflect.Int:
		pool, ok := generatedInts[name]
		if !ok {
			pool = []int{1}
		}
		v.SetInt(int64(pool[g.next()%len(pool)]))
	case reflect.Bool:
		v.SetBool(g.next()%2 == 1)
	}
}

// Generated configs that Ignition finds valid translate to every spec as
// MinVersion says: refused exactly where it names a reason, and otherwise
// written so that they read back as themselves.
func FuzzTranslateGenerated(f *testing.F) {
	for _, seed := range [][]byte{{}, {1, 1, 1, 1}, []byte("storage"), []byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c")} {
		f.Add(seed)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 256 {
		seed := make([]byte, 32+r.IntN(256))
		for j := range seed {
			seed[j] = byte(r.Uint32())
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cfg Config
		g := &generator{data: data}
		g.fill(reflect.ValueOf(&cfg).Elem(), "")
		cfg.Ignition.Version = Newest.String()
		if validate.ValidateWithContext(cfg, nil).IsFatal() {
			return
		}
		_, reasons := minVersion(&cfg)
		for _, v := range OutputVersions {
			blocked := ReasonsAbove(reasons, v)
			if v == V2_2 {
				blocked = append(blocked, spec2Blockers(&cfg)...)
			}
			typed, err := translateTo(&cfg, v)
			var ce *CannotExpressError
			switch {
			case len(blocked) > 0 && !errors.As(err, &ce):
				t.Fatalf("translateTo %s = %v, want a CannotExpressError for %v", v, err, blocked)
			case len(blocked) > 0:
				continue
			case err != nil && !errors.As(err, &ce):
				out, _ := Marshal(cfg, false)
				t.Fatalf("MinVersion sees nothing above %s, but translate: %v\n%s", v, err, out)
			case err != nil:
				t.Fatalf("translateTo %s: %v", v, err)
			}
			readsBack(t, typed, cfg, v, false)
		}
	})
}
