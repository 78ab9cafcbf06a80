package convert

import (
	"bytes"
	"crypto/sha256"
	"strconv"

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
	lead string
	orig map[int][]byte // the contents, by token (in the config's bytes)
	max  int            // above every token
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
	h := holder{s: scanner{b: raw}, min: min, valid: valid, held: &Held{orig: map[int][]byte{}}, index: map[itemKey]int{}, ok: true}
	h.held.lead = valid.heldLead()
	if bytes.Contains(raw, []byte(h.held.lead)) {
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
		out = append(out, h.held.lead...)
		out = strconv.AppendInt(out, int64(sp.n), 10)
		out = append(out, '"')
		at = sp.end
	}
	h.held.JSON = append(out, raw[at:]...)
	return h.held, true
}

// holder is Hold's walk: the sources held, where they are, and whether
// holding stays certain.
type holder struct {
	s     scanner
	min   int
	valid *ValidItems
	held  *Held
	index map[itemKey]int // each content's token
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
	v, plain := s.plain()
	if !plain { // its text would need decoding: left as it is
		s.i = start
		return s.skip()
	}
	if len(v) < h.min || !bytes.HasPrefix(v, []byte("data:")) {
		return true
	}
	key := itemKey(sha256.Sum256(v))
	n, seen := h.index[key]
	if !seen {
		var valid bool
		if n, valid = h.valid.heldToken(h.held.lead, key, v, len(h.held.orig)); !valid {
			h.ok = false
			return false
		}
		h.index[key] = n
		h.held.orig[n] = v
		h.held.max = max(h.held.max, n+1)
	}
	h.spans = append(h.spans, heldSpan{start, s.i, n})
	return true
}

// Restore is b, JSON written from h.JSON (by Parse and an Encoder), with
// each token's content put back as Marshal writes it, or false when a
// token is left.
func (h *Held) Restore(b []byte) ([]byte, bool) {
	js := make(map[int][]byte, len(h.orig))
	for n, o := range h.orig {
		js[n] = quoted(o)
	}
	out, _ := restoreTokens(b, []byte(`"`+h.lead), '"', h.max, func(n int) []byte {
		if o, ok := js[n]; ok {
			return o
		}
		return []byte(`"` + h.lead + strconv.Itoa(n)) // not ours: left, and found below
	})
	return out, !bytes.Contains(out, []byte(h.lead))
}

// quoted is plain ASCII o as Marshal writes a string, less the closing
// quote: as it is, but where HTML's <, > and & are escaped.
func quoted(o []byte) []byte {
	if bytes.IndexByte(o, '<') >= 0 || bytes.IndexByte(o, '>') >= 0 || bytes.IndexByte(o, '&') >= 0 {
		b, _ := Marshal(string(o), false) // a string always encodes
		return b[:len(b)-1]
	}
	return append([]byte{'"'}, o...)
}

// heldLead is the lead of the tokens Hold writes: one per ValidItems (until
// Forget), so that a content is the same token in every config held
// through it, and what is kept of an item holding one (a step up) serves
// the next config; a fresh one each time for a nil v.
func (v *ValidItems) heldLead() string {
	if v == nil {
		return newPlaceholders(false).lead
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lead == "" {
		v.lead = newPlaceholders(false).lead
	}
	return v.lead
}

// heldToken is content s's (keyed key) token number under lead, the same
// in every config held through v until Forget, or false where Ignition
// refuses s as a source (as config/v3_6/types.Resource.Validate checks it:
// url.Parse, then, for a data URL, dataurl.DecodeString, the same in every
// spec 3 version), both kept by content; false too once lead is no longer
// v's: a Forget since the Hold began renumbers contents, and two of them
// would share a number under the Hold's lead. For a nil v, next.
func (v *ValidItems) heldToken(lead string, key itemKey, s []byte, next int) (int, bool) {
	if v == nil {
		return next, sourceValid(string(s))
	}
	v.mu.Lock()
	n, known := v.tokens[key]
	current := v.lead == lead
	v.mu.Unlock()
	if !current {
		return 0, false
	}
	if known {
		return n, n >= 0
	}
	ok := sourceValid(string(s))
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lead != lead {
		return 0, false
	}
	if n, known := v.tokens[key]; known {
		return n, n >= 0
	}
	if v.tokens == nil {
		v.tokens = map[itemKey]int{}
	}
	n = -1
	if ok {
		n = len(v.tokens) // each entry its own number: none is reused
	}
	v.tokens[key] = n
	return n, ok
}

func sourceValid(s string) bool {
	return !types.Resource{Source: &s}.Validate(path.New("json")).IsFatal()
}
