package convert

import (
	"bytes"
	"crypto/sha256"
	"strconv"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/vcontext/path"
)

// MinHeld is the size from which Hold holds a data URL out of a config.
const MinHeld = minPlaceholder

// Held is a spec-3 config's JSON with its large inline file contents held
// out: each file's contents or append source that is a data URL of at
// least the size asked is a token instead (one per distinct content; see
// placeholders). A rendered config is 85 % data URLs, and every Ignition
// parse of it (the input's, each reader's of a candidate) decodes and
// validates them all, though what a parse, a translation between specs or
// a reader's comparison does with a valid data URL does not depend on
// which one it is: Ignition validates a data URL alone, by the same code
// in every spec 3 version (config/v3_N/types/url.go), and no step between
// specs changes one. So a held config, with its data URLs checked valid,
// parses, translates and compares as the config does, tokens standing for
// their contents one for one, and what is written from it is, tokens put
// back, what would be written from the config.
type Held struct {
	JSON []byte // the config, with tokens
	ph   *placeholders
}

// Hold holds out of raw, a spec-3 config's JSON, every data URL of at least
// min bytes at storage.files[].contents.source and
// storage.files[].append[].source. ok is false when there is none, or when
// holding is not certain to keep what raw means: a JSON layout the scan
// does not expect (then the parser decides, on raw), or a data URL Ignition
// refuses (the parse of raw says where). A source with an escape or a byte
// outside printable ASCII is left in place (its text would need decoding).
// valid, which may be nil, keeps each content's check for the next config.
func Hold(raw []byte, valid *ValidItems, min int) (*Held, bool) {
	h := holder{s: scanner{b: raw}, min: min, valid: valid, ph: newPlaceholders(false), index: map[string]int{}, ok: true}
	if bytes.Contains(raw, []byte(h.ph.lead)) {
		return nil, false // it cannot name a token (a random nonce), but a check costs nothing
	}
	if !h.config() || !h.ok || len(h.spans) == 0 {
		return nil, false
	}
	out := make([]byte, 0, len(raw)/2)
	at := 0
	for _, sp := range h.spans {
		out = append(out, raw[at:sp.start]...)
		out = append(out, '"')
		out = append(out, h.ph.lead...)
		out = strconv.AppendInt(out, int64(sp.n), 10)
		out = append(out, '"')
		at = sp.end
	}
	return &Held{JSON: append(out, raw[at:]...), ph: h.ph}, true
}

// holder is Hold's walk: the sources held, where they are, and whether
// holding stays certain.
type holder struct {
	s     scanner
	min   int
	valid *ValidItems
	ph    *placeholders
	index map[string]int // each content's token
	spans []heldSpan
	ok    bool
}

// heldSpan is one source held: raw[start:end] is token n.
type heldSpan struct{ start, end, n int }

// config walks the config to storage.files, passing over the rest.
func (h *holder) config() bool {
	s := &h.s
	return s.object(func(key string) bool {
		if key != "storage" || !h.at('{') {
			return s.skip()
		}
		return s.object(func(key string) bool {
			if key == "files" {
				return s.array(h.file) || s.skipNull()
			}
			return s.skip()
		})
	})
}

// at reports whether the next value starts with c.
func (h *holder) at(c byte) bool {
	h.s.space()
	return h.s.i < len(h.s.b) && h.s.b[h.s.i] == c
}

func (h *holder) file() bool {
	s := &h.s
	if !h.at('{') {
		return s.skip()
	}
	return s.object(func(key string) bool {
		switch key {
		case "contents":
			return h.resource()
		case "append":
			return s.array(h.resource) || s.skipNull()
		}
		return s.skip()
	})
}

func (h *holder) resource() bool {
	s := &h.s
	if !h.at('{') {
		return s.skip()
	}
	return s.object(func(key string) bool {
		if key == "source" {
			return h.source()
		}
		return s.skip()
	})
}

// source holds the source the scanner is at, where it can.
func (h *holder) source() bool {
	s := &h.s
	if !h.at('"') {
		return s.skip()
	}
	start := s.i
	v, plain := s.str()
	if !plain { // its text would need decoding: left as it is
		s.i = start
		return s.skip()
	}
	if len(v) < h.min || !strings.HasPrefix(v, "data:") {
		return true
	}
	n, seen := h.index[v]
	if !seen {
		if !h.valid.source(v) {
			h.ok = false
			return false
		}
		n = len(h.ph.orig)
		h.index[v] = n
		h.ph.orig = append(h.ph.orig, v)
	}
	h.spans = append(h.spans, heldSpan{start, s.i, n})
	return true
}

// Restore is b, JSON written from h.JSON (by Parse and an Encoder), with
// each token's content put back as Marshal writes it, or false when a
// token is left.
func (h *Held) Restore(b []byte) ([]byte, bool) {
	out, _ := h.ph.restoreJSON(b)
	return out, !h.ph.leftover(out)
}

// source reports whether Ignition accepts s as a source, as
// config/v3_6/types.Resource.Validate checks it (url.Parse, then, for a
// data URL, dataurl.DecodeString: the same in every spec 3 version), kept
// by content. A nil v keeps nothing.
func (v *ValidItems) source(s string) bool {
	if v == nil {
		return sourceValid(s)
	}
	key := itemKey(sha256.Sum256([]byte(s)))
	v.mu.Lock()
	ok, known := v.sources[key]
	v.mu.Unlock()
	if known {
		return ok
	}
	ok = sourceValid(s)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sources == nil {
		v.sources = map[itemKey]bool{}
	}
	v.sources[key] = ok
	return ok
}

func sourceValid(s string) bool {
	return !types.Resource{Source: &s}.Validate(path.New("json")).IsFatal()
}
