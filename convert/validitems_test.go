package convert

import (
	"bytes"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/ignition/v2/config/validate"
)

// ValidItems passes a config exactly when Ignition's validation of the
// whole finds nothing fatal, at every spec 3 version the config translates
// to: for a valid config, and for configs that break each check Ignition
// makes of one item and across items. One ValidItems sees them all, as a
// set's renders share one.
func TestValidItemsAgree(t *testing.T) {
	var v ValidItems
	valid, invalid := itemCases()
	for _, target := range OutputVersions {
		if target.Major != 3 {
			continue
		}
		for _, c := range append([]configCase{{"valid", valid}}, invalid...) {
			_, reasons := minVersion(&c.cfg)
			typed, err := translate(&c.cfg, target, reasons, nil, nil)
			if err != nil {
				continue // not expressible there, or refused whole
			}
			whole := !validate.ValidateWithContext(typed, nil).IsFatal()
			if got := v.Passes(typed); got != whole || whole != (c.name == "valid") {
				t.Errorf("%s at %s: passes %v, whole validation passes %v", c.name, target, got, whole)
			}
		}
	}
	// translate refuses an invalid config whole, so the failing cases run on
	// the newest spec's types untranslated (the checks across items are the
	// same code, over the same fields, in every spec 3 version).
	for _, c := range invalid {
		if whole := !validate.ValidateWithContext(c.cfg, nil).IsFatal(); whole || v.Passes(c.cfg) {
			t.Errorf("%s: passes %v, whole validation passes %v", c.name, v.Passes(c.cfg), whole)
		}
	}
}

// Tokens read alike whatever their encoder's nonce; anything else stays.
func TestAnyToken(t *testing.T) {
	a, b := newPlaceholders(false), newPlaceholders(false)
	big := "data:," + strings.Repeat("q", minPlaceholder)
	ja, _ := Marshal(a.swap(placeholderConfig(big, big)), false)
	jb, _ := Marshal(b.swap(placeholderConfig(big, big)), false)
	if bytes.Equal(ja, jb) || !bytes.Equal(anyTokenBytes(ja), anyTokenBytes(jb)) || bytes.Contains(anyTokenBytes(ja), []byte(a.lead)) {
		t.Errorf("tokens of two encoders:\n%s\n%s", anyTokenBytes(ja), anyTokenBytes(jb))
	}
	for s, changes := range map[string]bool{
		`{"source":"data:,mcsph-"}`: true, `{"source":"data:,mcsph-0a-1"}`: true, `{"source":"data:,mcsph-12x"}`: false,
		`"data:,mcsph-0`: false, `plain`: false,
		// A string that looks like a token but is no source is a user's.
		`{"name":"data:,mcsph-1"}`: false, `{"a":"data:,mcsph-"}`: false,
	} {
		if got := anyTokenBytes([]byte(s)); (string(got) != s) != changes {
			t.Errorf("anyToken(%s) = %s", s, got)
		}
	}
}

type configCase struct {
	name string
	cfg  Config
}

// itemCases are a valid config and configs each failing one of Ignition's
// checks: of an item alone, and across items (what the stand-ins must keep).
func itemCases() (Config, []configCase) {
	str := func(s string) *string { return &s }
	yes := true
	file := func(path string) types.File {
		return types.File{Node: types.Node{Path: path}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: str("data:,x")}}}
	}
	unit := func(name, contents string) types.Unit { return types.Unit{Name: name, Contents: str(contents)} }
	with := func(f func(*Config)) Config {
		var c Config
		c.Ignition.Version = Newest.String()
		c.Storage.Files = []types.File{file("/etc/a"), file("/etc/b")}
		c.Systemd.Units = []types.Unit{unit("a.service", "[Unit]\nDescription=a\n")}
		f(&c)
		return c
	}
	return with(func(*Config) {}), []configCase{
		{"relative path", with(func(c *Config) { c.Storage.Files[1].Path = "etc/b" })},
		{"bad mode", with(func(c *Config) { m := 0o17777; c.Storage.Files[1].Mode = &m })},
		{"overwrite without source", with(func(c *Config) {
			c.Storage.Files[1].Overwrite, c.Storage.Files[1].Contents.Source = &yes, nil
		})},
		{"bad data URL", with(func(c *Config) { c.Storage.Files[1].Contents.Source = str("data:;base64,!!") })},
		{"same path twice", with(func(c *Config) { c.Storage.Files[1].Path = "/etc/a" })},
		{"file and directory at one path", with(func(c *Config) {
			c.Storage.Directories = []types.Directory{{Node: types.Node{Path: "/etc/b"}}}
		})},
		{"file below a link", with(func(c *Config) {
			c.Storage.Links = []types.Link{{Node: types.Node{Path: "/etc"}, LinkEmbedded1: types.LinkEmbedded1{Target: str("/usr/etc")}}}
		})},
		{"file at a unit's path", with(func(c *Config) { c.Storage.Files[1].Path = "/etc/systemd/system/a.service" })},
		{"file at a dropin's path", with(func(c *Config) {
			c.Systemd.Units[0].Dropins = []types.Dropin{{Name: "x.conf", Contents: str("[Unit]\n")}}
			c.Storage.Files[1].Path = "/etc/systemd/system/a.service.d/x.conf"
		})},
		// Past the items: what Passes validates of the rest, kept by content.
		{"relative directory", with(func(c *Config) { c.Storage.Directories = []types.Directory{{Node: types.Node{Path: "etc/d"}}} })},
		{"bad merge source", with(func(c *Config) {
			c.Ignition.Config.Merge = []types.Resource{{Source: str("data:;base64,!!")}}
		})},
		// Strings that look like tokens where a check compares entries.
		{"two users of one token-like name", with(func(c *Config) {
			c.Passwd.Users = []types.PasswdUser{{Name: "data:,mcsph-1"}, {Name: "data:,mcsph-1"}}
		})},
		{"two headers of one token-like name", with(func(c *Config) {
			c.Storage.Files[1].Contents.HTTPHeaders = []types.HTTPHeader{{Name: "data:,mcsph-1", Value: str("a")}, {Name: "data:,mcsph-1", Value: str("b")}}
		})},
		{"two merged configs of one token-like source", with(func(c *Config) {
			c.Ignition.Config.Merge = []types.Resource{{Source: str("data:,mcsph-1")}, {Source: str("data:,mcsph-1")}}
		})},
		{"unparsable unit", with(func(c *Config) { c.Systemd.Units[0].Contents = str("[Unit\nx") })},
		{"unit without a type", with(func(c *Config) { c.Systemd.Units[0].Name = "a" })},
		{"unit twice", with(func(c *Config) { c.Systemd.Units = append(c.Systemd.Units, unit("a.service", "")) })},
		{"dropin not .conf", with(func(c *Config) {
			c.Systemd.Units[0].Dropins = []types.Dropin{{Name: "x.txt", Contents: str("[Unit]\n")}}
		})},
		{"dropin twice", with(func(c *Config) {
			c.Systemd.Units[0].Dropins = []types.Dropin{{Name: "x.conf"}, {Name: "x.conf"}}
		})},
	}
}

// What a ValidItems keeps of an item is its key, not the item: 64 files of
// 64 KiB each (4 MiB of JSON, which keys of the whole JSON would keep)
// leave a few KiB behind. Each item is still told apart: every one is
// validated, once.
func TestValidItemsKeepsKeys(t *testing.T) {
	const n, size = 64, 64 << 10
	var v ValidItems
	heap := func() uint64 {
		// Twice: sync.Pool's buffers (encoding/json's, grown to an item's
		// size) outlive one collection in its victim cache.
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	pass := func(i int) bool {
		var c Config
		c.Ignition.Version = Newest.String()
		src := "data:," + strings.Repeat(strconv.Itoa(i%10), size)
		c.Storage.Files = []types.File{{Node: types.Node{Path: "/etc/f" + strconv.Itoa(i)}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}}}}
		return v.Passes(c)
	}
	before := heap()
	for i := range n {
		if !pass(i) {
			t.Fatalf("file %d does not pass", i)
		}
	}
	kept := int64(heap()) - int64(before)
	t.Logf("%d items of %d bytes: %d bytes kept", n, size, kept)
	if kept > n*size/16 {
		t.Errorf("%d items of %d bytes: %d bytes kept, want under %d", n, size, kept, n*size/16)
	}
	if len(v.valid) != n {
		t.Errorf("%d keys for %d items", len(v.valid), n)
	}
	runtime.KeepAlive(&v)
}

// belowLink is Ignition's test, strings.HasPrefix(p, link+"/") for any
// link, by lookups.
func TestBelowLink(t *testing.T) {
	links := []string{"/etc/a", "/etc/b/", "/", ""}
	paths := []string{"/etc/a/x", "/etc/a", "/etc/ab", "/etc/b/x", "/etc/b//x", "/x", "x", "", "/etc/a/y/z", "/e"}
	for n := range len(links) + 1 {
		set := map[string]bool{}
		for _, l := range links[:n] {
			set[l] = true
		}
		for _, p := range paths {
			want := slices.ContainsFunc(links[:n], func(l string) bool { return strings.HasPrefix(p, l+"/") })
			if got := belowLink(p, set); got != want {
				t.Errorf("links %q, path %q: %v, want %v", links[:n], p, got, want)
			}
		}
	}
}

// anyTokenBytes is what anyToken writes, in one slice.
func anyTokenBytes(js []byte) []byte {
	var out []byte
	anyToken(js, func(b []byte) { out = append(out, b...) })
	return out
}

// A string that looks like a token where a check compares entries (user
// names, header names, merged configs' sources) is told apart from
// another: after a config with two different such strings passes, one
// with the same string twice does not (it did, found by a review of the
// change: both were keyed alike).
func TestValidItemsTokenLookalikes(t *testing.T) {
	str := func(s string) *string { return &s }
	for name, with := range map[string]func(a, b string) Config{
		"users": func(a, b string) Config {
			var c Config
			c.Ignition.Version = Newest.String()
			c.Passwd.Users = []types.PasswdUser{{Name: a}, {Name: b}}
			return c
		},
		"headers": func(a, b string) Config {
			var c Config
			c.Ignition.Version = Newest.String()
			c.Storage.Files = []types.File{{Node: types.Node{Path: "/etc/a"}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{
				Source: str("https://example.com/a"), HTTPHeaders: []types.HTTPHeader{{Name: a, Value: str("1")}, {Name: b, Value: str("2")}}}}}}
			return c
		},
		"merged configs": func(a, b string) Config {
			var c Config
			c.Ignition.Version = Newest.String()
			c.Ignition.Config.Merge = []types.Resource{{Source: str(a)}, {Source: str(b)}}
			return c
		},
	} {
		var v ValidItems
		distinct, same := with("data:,mcsph-1", "data:,mcsph-2"), with("data:,mcsph-1", "data:,mcsph-1")
		if !v.Passes(distinct) || validate.ValidateWithContext(distinct, nil).IsFatal() {
			t.Errorf("%s: two different names do not pass", name)
		}
		if !validate.ValidateWithContext(same, nil).IsFatal() || v.Passes(same) {
			t.Errorf("%s: one name twice passes (whole validation fatal: %v)", name, validate.ValidateWithContext(same, nil).IsFatal())
		}
	}
}
