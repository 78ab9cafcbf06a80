package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// jsonSyntax turns a JSON syntax error into one with a line and column, and
// returns nil for any other error.
func jsonSyntax(raw []byte, err error) *SyntaxError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(raw, se.Offset)
		return &SyntaxError{Format: "JSON", Line: line, Column: col, Offset: se.Offset, Msg: se.Error()}
	}
	return nil
}

// lineCol turns a byte offset into a 1-based line and column (in bytes).
func lineCol(raw []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(raw)))
	before := raw[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

// typeError finds a JSON value of the wrong type for t and says where.
// Ignition's parsers give only a line and column for it.
func typeError(raw []byte, t reflect.Type) *Problem {
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); !errors.As(err, &te) {
		return nil
	}
	path := pathAt(raw, te.Offset)
	return &Problem{Path: path, Message: typeMistake(te, path), Stopped: true}
}

// typeMistake says what a value of the wrong type should have been, in
// JSON's words rather than Go's ("a whole number", not "a int").
func typeMistake(te *json.UnmarshalTypeError, path Path) string {
	want := "a " + te.Type.String()
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	case reflect.String:
		want = "a string"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Struct, reflect.Map:
		want = "an object"
	}
	msg := fmt.Sprintf("want %s, not a JSON %s", want, te.Value)
	if s := path.String(); strings.HasSuffix(s, ".mode") && te.Value == "string" {
		msg += `: a mode is a decimal number in Ignition (0644 is 420; in YAML, an unquoted 0644 reads as 420)`
	}
	return msg
}

// pathAt returns the JSON path of the innermost value that ends at or
// contains the byte offset off.
func pathAt(raw []byte, off int64) Path {
	type frame struct {
		obj, wantKey bool
		key          string
		idx          int
	}
	var stack []frame
	path := func() Path {
		parts := make([]any, len(stack))
		for i, f := range stack {
			if f.obj {
				parts[i] = f.key
			} else {
				parts[i] = f.idx
			}
		}
		return NewPath(parts...)
	}
	next := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].idx++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return NewPath()
		}
		hit := start < off && off <= dec.InputOffset()
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if key, ok := tok.(string); ok {
				stack[n-1].key, stack[n-1].wantKey = key, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if hit {
				return path()
			}
			stack = append(stack, frame{obj: tok == json.Delim('{'), wantKey: tok == json.Delim('{')})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if hit {
				return path()
			}
			next()
		default:
			if hit {
				return path()
			}
			next()
		}
	}
}

// duplicateKeys are the fields Ignition keys its lists by, in the order
// tried: an entry's is the first it has.
var duplicateKeys = []string{"path", "name", "device", "label"}

// nameDuplicates says which key a duplicate entry repeats: Ignition's
// "duplicate entry defined" names neither the field nor the value.
func nameDuplicates(raw []byte, ps []Problem) []Problem {
	var doc any
	for i := range ps {
		if ps[i].Message != "duplicate entry defined" {
			continue
		}
		if doc == nil && json.Unmarshal(raw, &doc) != nil {
			return ps
		}
		entry, ok := valueAt(doc, ps[i].Path.Path).(map[string]any)
		if !ok {
			continue
		}
		for _, k := range duplicateKeys {
			if v, ok := entry[k].(string); ok {
				ps[i].Message = fmt.Sprintf("duplicate entry defined: an earlier entry of this list has the same %s %q", k, v)
				break
			}
		}
	}
	return ps
}

// valueAt is the value at path in a decoded JSON document, or nil.
func valueAt(doc any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := doc.(map[string]any)
			if !ok {
				return nil
			}
			doc = m[k]
		case int:
			l, ok := doc.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil
			}
			doc = l[k]
		default:
			return nil
		}
	}
	return doc
}
