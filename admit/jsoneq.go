package admit

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// A JSON value compared without decoding it: a rendered config is 170 KB,
// which encoding/json decodes into maps in milliseconds, while the two
// encodings a review compares (the API server's, members sorted, and the
// lowered one, in the spec's order) hold the same values in the same
// layout but where the rewrite changed them. Members are matched by name,
// strings by their text, numbers and literals as written.

// errJSON is a value the scanner cannot read; callers then take the values
// as different.
var errJSON = errors.New("not JSON")

// member is one member of an object: its name, decoded, and its value.
type member struct {
	name  string
	value []byte
}

// members are an object's members, in order.
func members(obj []byte) ([]member, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, errJSON
	}
	var out []member
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return out, nil
	}
	for {
		end, err := valueEnd(obj, i)
		if err != nil || obj[i] != '"' {
			return nil, errJSON
		}
		name, err := stringText(obj[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, errJSON
		}
		start := skipSpace(obj, i+1)
		if end, err = valueEnd(obj, start); err != nil {
			return nil, err
		}
		out = append(out, member{name, obj[start:end]})
		i = skipSpace(obj, end)
		switch {
		case i < len(obj) && obj[i] == ',':
			i = skipSpace(obj, i+1)
		case i < len(obj) && obj[i] == '}':
			return out, nil
		default:
			return nil, errJSON
		}
	}
}

// elements are an array's elements, in order.
func elements(arr []byte) ([][]byte, error) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, errJSON
	}
	var out [][]byte
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return out, nil
	}
	for {
		end, err := valueEnd(arr, i)
		if err != nil {
			return nil, err
		}
		out = append(out, arr[i:end])
		i = skipSpace(arr, end)
		switch {
		case i < len(arr) && arr[i] == ',':
			i = skipSpace(arr, i+1)
		case i < len(arr) && arr[i] == ']':
			return out, nil
		default:
			return nil, errJSON
		}
	}
}

// valueEnd is where the value starting at b[i] ends. It checks nesting
// and strings only: what it is given was written by an encoder.
func valueEnd(b []byte, i int) (int, error) {
	start, depth := i, 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			if i = stringEnd(b, i); i < 0 {
				return 0, errJSON
			}
			if depth == 0 {
				return i, nil
			}
			i--
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // the end of what holds a number or literal
				if i == start {
					return 0, errJSON
				}
				return i, nil
			}
			if depth--; depth == 0 {
				return i + 1, nil
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				if i == start {
					return 0, errJSON
				}
				return i, nil
			}
		}
	}
	if depth != 0 || i == start {
		return 0, errJSON
	}
	return i, nil
}

// stringEnd is the index after the string starting at b[i], or -1. It
// jumps from quote to quote: a rendered config is mostly long data URLs.
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; j++ {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		escapes := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			escapes++
		}
		if escapes%2 == 0 {
			return j + 1
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringText is a JSON string's text, as encoding/json decodes it
// (invalid UTF-8 replaced).
func stringText(s []byte) (string, error) {
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		if len(s) < 2 {
			return "", errJSON
		}
		return string(s[1 : len(s)-1]), nil
	}
	var out string
	if json.Unmarshal(s, &out) != nil {
		return "", errJSON
	}
	return out, nil
}

// sameJSON reports whether two JSON values are the same: objects with the
// same members in any order, arrays element by element, strings by their
// text, numbers and literals as written. A value it cannot read is unequal.
func sameJSON(a, b []byte) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if bytes.Equal(a, b) {
		return len(a) > 0
	}
	if len(a) == 0 || len(b) == 0 || a[0] != b[0] {
		return false
	}
	switch a[0] {
	case '{':
		return objectsEqual(a, b)
	case '[':
		ea, err1 := elements(a)
		eb, err2 := elements(b)
		if err1 != nil || err2 != nil || len(ea) != len(eb) {
			return false
		}
		for i := range ea {
			if !sameJSON(ea[i], eb[i]) {
				return false
			}
		}
		return true
	case '"':
		sa, err1 := stringText(a)
		sb, err2 := stringText(b)
		return err1 == nil && err2 == nil && sa == sb
	}
	return false
}

// objectsEqual is sameJSON of two objects.
func objectsEqual(a, b []byte) bool {
	ma, err1 := members(a)
	mb, err2 := members(b)
	if err1 != nil || err2 != nil || len(ma) != len(mb) {
		return false
	}
	byName := make(map[string][]byte, len(mb))
	for _, m := range mb {
		byName[m.name] = m.value
	}
	if len(byName) != len(mb) {
		return false // a name twice
	}
	for _, m := range ma {
		v, ok := byName[m.name]
		if !ok || !sameJSON(m.value, v) {
			return false
		}
		delete(byName, m.name) // a name twice in a

	}
	return true
}
