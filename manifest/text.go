package manifest

import (
	"bytes"
	"unicode/utf8"
)

// text is a file's bytes with where each line starts, to turn the lines
// and columns the YAML parser reports (columns in characters) into byte
// offsets.
type text struct {
	b     []byte
	lines []int // byte offset of each line's start; lines[0] is line 1
}

func newText(b []byte) *text {
	t := &text{b: b, lines: []int{0}}
	for i, c := range b {
		if c == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	return t
}

// offset is the byte offset of line and column (both 1-based, the column
// counted in characters), or -1 when they are outside the text.
func (t *text) offset(line, col int) int {
	if line < 1 || line > len(t.lines) || col < 1 {
		return -1
	}
	i := t.lines[line-1]
	for n := 1; n < col; n++ {
		if i >= len(t.b) || t.b[i] == '\n' {
			return -1
		}
		_, w := utf8.DecodeRune(t.b[i:])
		i += w
	}
	return i
}

// lineOf is the 1-based line holding offset off.
func (t *text) lineOf(off int) int {
	lo, hi := 0, len(t.lines)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if t.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + 1
}

// lineStart is the offset of the start of the line holding off.
func (t *text) lineStart(off int) int { return t.lines[t.lineOf(off)-1] }

// lineEnd is the offset just past the newline ending the line holding off
// (the end of the text on its last line).
func (t *text) lineEnd(off int) int {
	if i := bytes.IndexByte(t.b[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(t.b)
}

// blankOrComment says whether a line (without its newline) holds nothing
// but spaces, or a comment.
func blankOrComment(ln []byte) bool {
	ln = bytes.TrimLeft(ln, " \t")
	return len(bytes.TrimRight(ln, "\r")) == 0 || ln[0] == '#'
}

// indentOf is how many spaces start the line holding off.
func (t *text) indentOf(off int) int {
	s := t.lineStart(off)
	n := 0
	for s+n < len(t.b) && t.b[s+n] == ' ' {
		n++
	}
	return n
}

// firstOnLine says whether only spaces precede off on its line.
func (t *text) firstOnLine(off int) bool {
	return len(bytes.TrimLeft(t.b[t.lineStart(off):off], " ")) == 0
}

// backOverTrivia moves end (a line start, or the end of the text) back
// over the whole lines before it that are blank or comments, down to no
// less than floor: they belong to what follows (a head comment), or to
// nothing.
func (t *text) backOverTrivia(end, floor int) int {
	for end > floor {
		prev := t.lineStart(end - 1)
		if prev < floor || !blankOrComment(bytes.TrimSuffix(t.b[prev:end], []byte("\n"))) {
			break
		}
		end = prev
	}
	return end
}
