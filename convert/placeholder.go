package convert

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/coreos/ignition/v2/config/v3_6/types"
)

// placeholders stand in for large inline file contents while an Encoder
// translates and encodes a config. Translating validates the result, and Ignition's
// validation decodes every data URL; writing JSON (or the YAML a rendered
// name is hashed over) scans every byte. Where the contents were validated
// already, each large data URL is swapped for a short token, and the
// original is put back in the output bytes: no spec version changes a data
// URL, so the bytes are those of encoding the config itself.
//
// Tokens carry a random nonce, so no content can name one; leftover finds
// any a restore did not put back.
type placeholders struct {
	lead      string   // "data:,mcsph-<nonce>-"; a token is lead + index
	orig      []string // the originals, by index
	plainOnly bool     // only contents YAML writes as plain scalars are swapped

	jsOnce sync.Once
	js     [][]byte // their JSON encodings less the closing quote, made on first use
}

// minPlaceholder is the size below which a source is left in place: the
// swap would cost more than it saves.
const minPlaceholder = 512

// newPlaceholders returns an empty set with a fresh nonce. With plainOnly,
// only contents YAML writes as a plain scalar (see restoreYAML) are swapped.
func newPlaceholders(plainOnly bool) *placeholders {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	return &placeholders{lead: "data:,mcsph-" + hex.EncodeToString(nonce[:]) + "-", plainOnly: plainOnly}
}

// swap returns a copy of cfg whose large data URLs are tokens; cfg is not
// changed. Swaps come before the first restoreJSON: contents swapped after
// it stay tokens there (and leftover finds them).
func (p *placeholders) swap(cfg Config) Config {
	files := slices.Clone(cfg.Storage.Files)
	for i := range files {
		f := &files[i]
		p.swapResource(&f.Contents)
		if len(f.Append) > 0 {
			f.Append = slices.Clone(f.Append)
			for j := range f.Append {
				p.swapResource(&f.Append[j])
			}
		}
	}
	cfg.Storage.Files = files
	return cfg
}

func (p *placeholders) swapResource(r *types.Resource) {
	if r.Source == nil || len(*r.Source) < minPlaceholder || !strings.HasPrefix(*r.Source, "data:") {
		return
	}
	if p.plainOnly && !yamlPlain(*r.Source) {
		return
	}
	tok := p.lead + strconv.Itoa(len(p.orig))
	p.orig = append(p.orig, *r.Source)
	r.Source = &tok
}

// yamlPlain reports whether s, known to start with "data:", is written by
// go.yaml.in/yaml/v2 (what sigs.k8s.io/yaml uses) as a plain scalar, byte
// for byte, wherever it stands in a block mapping: printable ASCII with no
// whitespace (so never folded), none of the characters JSON or YAML escape
// or that start a comment or indicator inside a scalar, and not ending in
// ":" (read as a mapping key there).
func yamlPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return s[len(s)-1] != ':'
}

var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for _, c := range []byte(":;,/+=%._-~()*!$'@?") {
		t[c] = true
	}
	return t
}()

// restoreJSON puts the originals, JSON-encoded, back into JSON bytes in
// one pass that finds the tokens wherever they are, and returns how many it
// put back. body is not changed. Safe for concurrent use.
func (p *placeholders) restoreJSON(body []byte) ([]byte, int) {
	js := p.jsonAll()
	return p.restore(body, []byte(`"`+p.lead), '"', len(js), func(n int) []byte { return js[n] })
}

// jsonAll is the originals swapped before its first call, JSON-encoded, less
// the closing quote: the bytes a token stands for, from its opening quote
// on. Every caller gets the same slices.
func (p *placeholders) jsonAll() [][]byte {
	p.jsOnce.Do(func() {
		p.js = make([][]byte, len(p.orig))
		for i, o := range p.orig {
			js, _ := Marshal(o, false) // a string always encodes
			p.js[i] = js[:len(js)-1]
		}
	})
	return p.js
}

// restoreYAML puts the originals back into YAML bytes written from the
// swapped config (after JSON decoding, as sigs.k8s.io/yaml does), where each
// token and each original is a plain scalar ending its line. Only a set
// made with plainOnly can restore YAML.
func (p *placeholders) restoreYAML(body []byte) ([]byte, int) {
	return p.restore(body, []byte(" "+p.lead), '\n', len(p.orig), func(n int) []byte {
		return append([]byte(" "), p.orig[n]...)
	})
}

// leftover reports whether body still holds a token: one a restore did not
// put back (the Encoder then encodes without placeholders).
func (p *placeholders) leftover(body []byte) bool {
	return len(p.orig) > 0 && bytes.Contains(body, []byte(p.lead))
}

// restore replaces each lead+index+end in body, index below limit, with
// with(index)+end.
func (p *placeholders) restore(body, lead []byte, end byte, limit int, with func(int) []byte) ([]byte, int) {
	if len(p.orig) == 0 {
		return body, 0
	}
	return restoreTokens(body, lead, end, limit, with)
}

// restoreTokens replaces each lead+index+end in body, index below limit,
// with with(index)+end.
func restoreTokens(body, lead []byte, end byte, limit int, with func(int) []byte) ([]byte, int) {
	if body == nil {
		return body, 0
	}
	text, found := splitTokens(body, lead, end, limit)
	if len(found) == 0 {
		return body, 0
	}
	size := len(body)
	for _, n := range found {
		size += len(with(n))
	}
	out := make([]byte, 0, size)
	for i, n := range found {
		out = append(out, text[i]...)
		out = append(out, with(n)...)
	}
	return append(out, text[len(found)]...), len(found)
}

// splitTokens cuts body at each lead+index+end, index below limit: text
// holds the bytes around them (one more than found, each a subslice of
// body, the end byte starting the next) and found their indices, in order.
func splitTokens(body, lead []byte, end byte, limit int) (text [][]byte, found []int) {
	start, rest := 0, body
	for {
		at := bytes.Index(rest, lead)
		if at < 0 {
			break
		}
		n, width := 0, 0
		for at+len(lead)+width < len(rest) && rest[at+len(lead)+width] >= '0' && rest[at+len(lead)+width] <= '9' && width < 9 {
			n = n*10 + int(rest[at+len(lead)+width]-'0')
			width++
		}
		stop := at + len(lead) + width
		if width == 0 || n >= limit || stop >= len(rest) || rest[stop] != end {
			// Not one of ours after all: go on past the lead.
			rest = rest[at+len(lead):]
			continue
		}
		cut := len(body) - len(rest) + at
		text = append(text, body[start:cut])
		found = append(found, n)
		rest = rest[stop:] // the end byte stays
		start = len(body) - len(rest)
	}
	return append(text, body[start:]), found
}
