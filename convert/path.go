package convert

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coreos/vcontext/path"
)

// Path is a JSON path in a config as Ignition's validation keeps one
// (path.ContextPath): object keys and list indexes. It is a string,
// "$.storage.files.0.mode", only where it is shown or written as JSON.
type Path struct{ path.ContextPath }

// NewPath is the path of parts (strings for keys, ints for indexes).
func NewPath(parts ...any) Path { return Path{path.New("json", parts...)} }

// ParsePath reads a path written as a string ("$.storage.files.3.mode"),
// for paths that arrive as text: a part that is a whole number is an index.
func ParsePath(s string) Path {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "$"), ".")
	if s == "" {
		return NewPath()
	}
	parts := strings.Split(s, ".")
	out := make([]any, len(parts))
	for i, x := range parts {
		if n, err := strconv.Atoi(x); err == nil {
			out[i] = n
		} else {
			out[i] = x
		}
	}
	return NewPath(out...)
}

// Append is p followed by parts; p is left as it is (path.ContextPath's
// Append can share p's array between two paths appended to it).
func (p Path) Append(parts ...any) Path {
	return Path{path.ContextPath{Tag: p.Tag, Path: append(slices.Clip(p.Path), parts...)}}
}

// Parts are p's parts as text, the keys to walk a YAML document by.
func (p Path) Parts() []string {
	out := make([]string, len(p.Path))
	for i, x := range p.Path {
		switch x := x.(type) {
		case string:
			out[i] = x
		case int:
			out[i] = strconv.Itoa(x)
		case fmt.Stringer:
			out[i] = x.String()
		default:
			// vcontext's tree.Key (an unknown key itself, as Ignition
			// reports "unused key") is a string of its own type.
			out[i] = fmt.Sprint(x)
		}
	}
	return out
}

// wholeUnnamed is p, except that the root ("$", the whole config) is no
// path: a problem with the whole config is not prefixed "$: ".
func wholeUnnamed(p Path) Path {
	if len(p.Path) == 0 {
		return Path{}
	}
	return p
}

// IsZero reports whether p is no path: the zero Path, not the root "$".
func (p Path) IsZero() bool { return p.Tag == "" && p.Path == nil }

// String is p as text, "$.storage.files.0"; no path is "".
func (p Path) String() string {
	if p.IsZero() {
		return ""
	}
	return p.ContextPath.String()
}

// MarshalJSON writes p as its string.
func (p Path) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON reads p from its string.
func (p *Path) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*p = ParsePath(s)
	return nil
}
