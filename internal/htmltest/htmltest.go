// Package htmltest finds elements, rows and text in parsed HTML pages for tests.
package htmltest

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// Find is the first node under n, n included, that match reports, or nil.
func Find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if m := Find(c, match); m != nil {
			return m
		}
	}
	return nil
}

// Attr is n's attribute key, or "".
func Attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// ByID is the element of doc with the id, failing t when there is none.
func ByID(t testing.TB, doc *html.Node, id string) *html.Node {
	t.Helper()
	n := Find(doc, func(n *html.Node) bool { return Attr(n, "id") == id })
	if n == nil {
		t.Fatalf("no element #%s", id)
	}
	return n
}

// Text is n's text with whitespace collapsed.
func Text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data + " ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// Cells are the texts of a table row's cells.
func Cells(tr *html.Node) []string {
	var out []string
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "td" {
			out = append(out, Text(c))
		}
	}
	return out
}

// HasRow reports whether a table row under n has cells starting with want,
// in order.
func HasRow(n *html.Node, want []string) bool {
	return Find(n, func(n *html.Node) bool {
		if n.Type != html.ElementNode || n.Data != "tr" {
			return false
		}
		got := Cells(n)
		if len(got) < len(want) {
			return false
		}
		for i, w := range want {
			if !strings.HasPrefix(got[i], w) {
				return false
			}
		}
		return true
	}) != nil
}
