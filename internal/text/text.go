// Package text holds the small helpers that shape the words mcs writes for people.
package text

import (
	"slices"
	"strconv"
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

// Bounded is a request-supplied name (a pool, a client, a query
// parameter) cut to 64 bytes, "…" when cut: short enough for a log line
// and a row of /status.
func Bounded(s string) string { return Truncate(s, 64, "…") }

// logValueMax bounds a header value in a log line: the headers are the
// client's to choose (up to 64 KiB), every request is logged, and real
// Ignition clients send under 200 bytes.
const logValueMax = 256

// ForLog is a request-supplied value cut to logValueMax bytes (at a rune
// boundary), saying how long it was.
func ForLog(v string) string {
	return Truncate(v, logValueMax, "…("+strconv.Itoa(len(v))+" bytes)")
}

// Closest is the word of list a person most likely meant by name, for
// "did you mean": Near's answer, else the word sharing the longest prefix
// of at least four letters (case aside); "" when none does or name is in
// list.
func Closest(name string, list []string) string {
	if name == "" || slices.Contains(list, name) {
		return ""
	}
	if m := Near(name, list); m != "" {
		return m
	}
	return longestPrefix(name, list)
}

// Near is the word of list name is a typo of: the same word in other case,
// else the nearest one at most two edits away (a letter missed, added,
// changed, or two swapped) when both have four letters or more; "" when
// none is or name is in list. Stricter than Closest: for names where a
// shared prefix means nothing (label keys under one domain).
func Near(name string, list []string) string {
	if name == "" || slices.Contains(list, name) {
		return ""
	}
	best, bestDist := "", 3
	for _, k := range list {
		if strings.EqualFold(k, name) {
			return k
		}
		if len(name) < 4 || len(k) < 4 {
			continue
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// longestPrefix is the word of list sharing the longest prefix (at least
// four letters, case aside) with name.
func longestPrefix(name string, list []string) string {
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

// editDistance is the optimal string alignment distance of a and b: the
// fewest insertions, deletions, substitutions and swaps of two adjacent
// bytes that turn a into b.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
