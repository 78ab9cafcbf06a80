package convert

import (
	"bytes"
	"encoding/binary"
	"strings"
)

// quickVersion finds a JSON config's ignition.version as decoding it into
// a struct would (the last of repeated keys), without decoding it. ok is
// false wherever that is not certain: an escape in a key or the version, a
// non-ASCII byte, a key that is "ignition" or "version" only when case is folded, an
// ignition or version of another JSON type, or bytes it does not expect.
// It checks no more of the JSON than it reads; the spec's parser does.
func quickVersion(raw []byte) (version string, ok bool) {
	s := scanner{b: raw}
	found := false
	ok = s.object(func(key string) bool {
		switch {
		case key == "ignition":
			found = false
			return s.object(func(key string) bool {
				switch {
				case key == "version":
					v, isString := s.str()
					version, found = v, isString
					return isString
				case strings.EqualFold(key, "version"):
					return false
				}
				return s.skip()
			})
		case strings.EqualFold(key, "ignition"):
			return false
		}
		return s.skip()
	})
	return version, ok && found
}

// scanner reads JSON just enough to find quickVersion's field.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// object reads an object, calling member for each key with the scanner
// at its value, which member must read; false stops it.
func (s *scanner) object(member func(key string) bool) bool {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.space()
		key, ok := s.str()
		if !ok {
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		if !member(key) {
			return false
		}
		if more, ok := s.after('}'); !more {
			return ok
		}
	}
}

// after reads what follows a member or an element: a comma (more to come)
// or close; ok is false where it is neither.
func (s *scanner) after(close byte) (more, ok bool) {
	s.space()
	if s.i >= len(s.b) {
		return false, false
	}
	s.i++
	switch s.b[s.i-1] {
	case ',':
		return true, true
	case close:
		return false, true
	}
	return false, false
}

// array reads an array, calling elem for each element with the scanner
// at it, which elem must read; false stops it.
func (s *scanner) array(elem func() bool) bool {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return false
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		s.space()
		if !elem() {
			return false
		}
		if more, ok := s.after(']'); !more {
			return ok
		}
	}
}

// skipNull passes over a null where an array or object was expected
// and did not start: what decoding takes as none.
func (s *scanner) skipNull() bool {
	s.space()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += len("null")
		return true
	}
	return false
}

// str reads a string of plain ASCII (no escape, no control character):
// what decoding it would not change.
func (s *scanner) str() (string, bool) {
	v, ok := s.plain()
	return string(v), ok
}

// plain is str's text as it stands in the JSON, not copied.
func (s *scanner) plain() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	end := bytes.IndexByte(s.b[s.i+1:], '"')
	if end < 0 {
		return nil, false
	}
	v := s.b[s.i+1 : s.i+1+end]
	if !plainASCII(v) {
		return nil, false
	}
	s.i += end + 2
	return v, true
}

// plainASCII reports whether b has no byte below 0x20, none from 0x80 up
// and no backslash: eight bytes at a time (a data URL runs to megabytes),
// a byte at a time from the first word that may have one.
func plainASCII(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		bs := w ^ (ones * '\\') // a zero byte where a backslash was
		if (w|(w-ones*0x20)|((bs-ones)&^bs))&highs != 0 {
			break
		}
	}
	for _, c := range b[i:] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// skip passes over one value of any type: strings whole (escapes
// included), brackets counted outside strings.
func (s *scanner) skip() bool {
	depth := 0
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			if !s.skipString() {
				return false
			}
			if depth == 0 {
				return true
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return true // the end of the enclosing object: a literal ended
			}
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return true // a number or literal ended
		}
		s.i++
	}
	return false
}

// skipString passes over a string, escapes included.
func (s *scanner) skipString() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return true
		}
	}
	return false
}

// QuickVersion is the spec a JSON config declares where quickVersion finds
// it certainly, without decoding the config; ok is false elsewhere.
func QuickVersion(raw []byte) (v Version, ok bool) {
	vs, ok := quickVersion(raw)
	if !ok {
		return Version{}, false
	}
	v, err := ParseVersion(vs)
	return v, err == nil && v.String() == vs
}
