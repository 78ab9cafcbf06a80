package promrules

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// keywords are PromQL's words that are never metric names: aggregation
// operators, set and vector-matching operators, modifiers (the lexer
// treats them as keywords wherever they stand).
var keywords = map[string]bool{
	"sum": true, "avg": true, "count": true, "min": true, "max": true, "group": true,
	"stddev": true, "stdvar": true, "topk": true, "bottomk": true, "count_values": true,
	"quantile": true, "limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "bool": true, "offset": true,
}

// labelLists are the keywords followed by a parenthesised list of label
// names, not of expressions.
var labelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// metricNames are the metric names a PromQL expression reads, sorted and
// each once: every vector selector's name (`foo`, `foo{a="b"}`,
// `foo[5m]`, `{__name__="foo"}`), not function names, keywords, label
// names, strings, numbers or durations. It tokenizes rather than parses
// (the prometheus module is too heavy a dependency for a test harness):
// an expression promtool accepts is read right; an unbalanced bracket or
// an unterminated string is an error. A selector matching names by a
// regular expression (`{__name__=~"..."}`) is an error, since what it
// reads cannot be listed.
func metricNames(expr string) ([]string, error) {
	toks, err := tokenize(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var depth []byte // open brackets
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == punct && strings.ContainsAny(t.text, "([{"):
			if t.text == "{" {
				name, end, err := selectorName(toks, i)
				if err != nil {
					return nil, err
				}
				if name != "" {
					names = append(names, name)
				}
				i = end
				continue
			}
			if t.text == "[" { // a range or subquery: durations only
				end := slices.IndexFunc(toks[i:], func(t token) bool { return t.kind == punct && t.text == "]" })
				if end < 0 {
					return nil, fmt.Errorf("unclosed \"[\" at offset %d", t.pos)
				}
				i += end
				continue
			}
			depth = append(depth, t.text[0])
		case t.kind == punct && strings.ContainsAny(t.text, ")]}"):
			if len(depth) == 0 || closer(depth[len(depth)-1]) != t.text[0] {
				return nil, fmt.Errorf("unbalanced %q at offset %d", t.text, t.pos)
			}
			depth = depth[:len(depth)-1]
		case t.kind == ident && labelLists[strings.ToLower(t.text)]:
			end, err := skipLabelList(toks, i+1)
			if err != nil {
				return nil, err
			}
			i = end
		case t.kind == ident && !keywords[strings.ToLower(t.text)] && !next(toks, i, "("):
			names = append(names, t.text)
		}
	}
	if len(depth) > 0 {
		return nil, fmt.Errorf("unclosed %q", string(depth[len(depth)-1]))
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func closer(open byte) byte {
	return map[byte]byte{'(': ')', '{': '}'}[open]
}

// next reports whether the token after i is the punctuation p.
func next(toks []token, i int, p string) bool {
	return i+1 < len(toks) && toks[i+1].kind == punct && toks[i+1].text == p
}

// skipLabelList skips the "(a, b)" starting at toks[i] (a group_left may
// have none) and returns the index of its ")", or i-1 when there is none.
func skipLabelList(toks []token, i int) (int, error) {
	if !next(toks, i-1, "(") {
		return i - 1, nil
	}
	for j := i + 1; j < len(toks); j++ {
		switch {
		case toks[j].kind == punct && toks[j].text == ")":
			return j, nil
		case toks[j].kind == punct && toks[j].text != ",":
			return 0, fmt.Errorf("unexpected %q in a label list at offset %d", toks[j].text, toks[j].pos)
		}
	}
	return 0, fmt.Errorf("unclosed label list at offset %d", toks[i].pos)
}

// selectorName reads the matchers "{...}" starting at toks[i] and returns
// the metric name a `__name__="x"` matcher gives ("" for none) and the
// index of the "}".
func selectorName(toks []token, i int) (string, int, error) {
	name := ""
	for j := i + 1; j < len(toks); j++ {
		t := toks[j]
		switch {
		case t.kind == punct && t.text == "}":
			return name, j, nil
		case t.kind == ident && t.text == "__name__":
			if j+2 >= len(toks) || toks[j+2].kind != str {
				return "", 0, fmt.Errorf("__name__ without a value at offset %d", t.pos)
			}
			if op := toks[j+1].text; op != "=" {
				return "", 0, fmt.Errorf("__name__%s at offset %d: the metrics it reads cannot be listed", op, t.pos)
			}
			name = toks[j+2].text
			j += 2
		case t.kind == punct && !slices.Contains([]string{",", "=", "!=", "=~", "!~"}, t.text):
			return "", 0, fmt.Errorf("unexpected %q in a selector at offset %d", t.text, t.pos)
		}
	}
	return "", 0, fmt.Errorf("unclosed selector at offset %d", toks[i].pos)
}

type tokenKind int

const (
	ident  tokenKind = iota // a name: metric, label, function or keyword
	str                     // a string's value, unquoted
	number                  // a number or a duration
	punct                   // an operator or bracket
)

type token struct {
	kind tokenKind
	text string
	pos  int
}

// operators are PromQL's multi-character operators, longest first.
var operators = []string{"==", "!=", ">=", "<=", "=~", "!~"}

// tokenize splits expr into tokens, dropping spaces and # comments.
func tokenize(expr string) ([]token, error) {
	var toks []token
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			s, end, err := quoted(expr, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{str, s, i})
			i = end
		case isDigit(c) || (c == '.' && i+1 < len(expr) && isDigit(expr[i+1])):
			j := i + 1
			for j < len(expr) && (isNameChar(expr[j]) || expr[j] == '.' ||
				((expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E') && !strings.ContainsAny(expr[i:j], "xX"))) {
				j++
			}
			toks = append(toks, token{number, expr[i:j], i})
			i = j
		case isNameStart(c):
			j := i + 1
			for j < len(expr) && isNameChar(expr[j]) {
				j++
			}
			kind := ident
			if w := strings.ToLower(expr[i:j]); w == "inf" || w == "nan" {
				kind = number
			}
			toks = append(toks, token{kind, expr[i:j], i})
			i = j
		default:
			op := string(c)
			for _, o := range operators {
				if strings.HasPrefix(expr[i:], o) {
					op = o
					break
				}
			}
			if !strings.Contains("()[]{},:=!<>+-*/%^@", string(c)) || op == "!" {
				r, _ := utf8.DecodeRuneInString(expr[i:])
				return nil, fmt.Errorf("unexpected %q at offset %d", r, i)
			}
			toks = append(toks, token{punct, op, i})
			i += len(op)
		}
	}
	return toks, nil
}

// quoted reads the string starting at expr[i] and returns its value and
// the offset after its closing quote. Backquoted strings have no escapes.
func quoted(expr string, i int) (string, int, error) {
	q := expr[i]
	var b strings.Builder
	for j := i + 1; j < len(expr); j++ {
		switch c := expr[j]; {
		case c == q:
			return b.String(), j + 1, nil
		case c == '\\' && q != '`' && j+1 < len(expr):
			j++
			b.WriteByte(expr[j])
		case c == '\n' && q != '`':
			return "", 0, fmt.Errorf("newline in the string at offset %d", i)
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string at offset %d", i)
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isNameChar(c byte) bool  { return isNameStart(c) || isDigit(c) }
