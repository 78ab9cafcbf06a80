// Package text holds the small helpers that shape the words mcs writes for people.
package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// VerbS is the "s" that makes "need" agree with what: "a file needs",
// "files need".
func VerbS(what string) string {
	if strings.HasSuffix(what, "s") && !strings.HasSuffix(what, "ss") {
		return ""
	}
	return "s"
}

// Truncate is s when it is at most n bytes; else its first n bytes or
// fewer, never splitting a character, followed by tail.
func Truncate(s string, n int, tail string) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail
}

// Closest is the word of list sharing the longest prefix (at least four
// letters, case aside) with name, for "did you mean"; "" when none does.
func Closest(name string, list []string) string {
	best, n := "", 3
	for _, k := range list {
		i := 0
		for i < len(k) && i < len(name) && unicode.ToLower(rune(k[i])) == unicode.ToLower(rune(name[i])) {
			i++
		}
		if i > n {
			best, n = k, i
		}
	}
	return best
}
