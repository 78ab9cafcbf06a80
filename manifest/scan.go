package manifest

import (
	"bytes"

	yaml "go.yaml.in/yaml/v3"
)

// scalarEnd is the offset just past the scalar token starting at start,
// written in style, or -1 when it is not one this package rewrites (a
// block scalar, or a plain one the line does not end). flow says it sits
// in a flow collection, where a comma or bracket ends a plain scalar.
func scalarEnd(b []byte, start int, style yaml.Style, flow bool) int {
	if start < 0 || start >= len(b) {
		return -1
	}
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		return quotedEnd(b, start)
	case style&yaml.SingleQuotedStyle != 0:
		return quotedEnd(b, start)
	case style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return -1
	}
	i := start
	for i < len(b) {
		c := b[i]
		if c == '\n' || c == '\r' {
			break
		}
		if c == '#' && i > start && (b[i-1] == ' ' || b[i-1] == '\t') {
			break
		}
		if flow && (c == ',' || c == ']' || c == '}') {
			break
		}
		i++
	}
	return start + len(bytes.TrimRight(b[start:i], " \t"))
}

// quotedEnd is the offset just past a quoted string starting at start
// (its quote, " or '), or -1 when it does not end.
func quotedEnd(b []byte, start int) int {
	q := b[start]
	if q != '"' && q != '\'' {
		return -1
	}
	for i := start + 1; i < len(b); i++ {
		switch {
		case q == '"' && b[i] == '\\':
			i++
		case b[i] == q && q == '\'' && i+1 < len(b) && b[i+1] == '\'':
			i++
		case b[i] == q:
			return i + 1
		}
	}
	return -1
}

// flowEnd is the offset just past the flow collection ({…} or […])
// starting at start, or -1 when it does not close.
func flowEnd(b []byte, start int) int {
	if start < 0 || start >= len(b) || (b[start] != '{' && b[start] != '[') {
		return -1
	}
	depth := 0
	for i := start; i < len(b); i++ {
		switch c := b[i]; c {
		case '"', '\'':
			e := quotedEnd(b, i)
			if e < 0 {
				return -1
			}
			i = e - 1
		case '#':
			if i > start && (b[i-1] == ' ' || b[i-1] == '\t' || b[i-1] == '\n') {
				if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
					i += j
				} else {
					return -1
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}
