package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/intake"
)

// planner finds the fewest bytes to rewrite so that one object's config
// reads as the lowered one.
type planner struct {
	doc  *document
	cfg  *yaml.Node // spec.config's value
	raw  []byte     // the config, as JSON
	res  *admit.Result
	want []byte       // marshalParsed of the lowered config
	at   convert.Path // of the object in the document
	ps   parses
}

// plan is the edits and what they rewrite: the version alone where that
// parses as the lowered config; else the version and the keys the lower
// spec lacks; else the whole config.
func (p *planner) plan() ([]edit, string, error) {
	if p.cfg == nil || p.doc.root == nil {
		return nil, "", errors.New("the document's YAML could not be read for positions")
	}
	if hasAlias(p.cfg) {
		return nil, "", fmt.Errorf("spec.config uses YAML anchors or aliases; write it without them, or set ignition.version to %s by hand", p.res.Stored)
	}
	if dels, ok := p.deletions(); ok {
		if ve, err := p.versionEdit(); err == nil {
			es, how := []edit{ve}, RewroteVersion
			if len(dels) > 0 {
				des, err := p.deletionEdits(dels)
				es, how = append(des, ve), RewroteFields
				if err != nil {
					es = nil
				}
			}
			if es != nil && p.reads(es) {
				return es, how, nil
			}
		}
	}
	e, err := p.wholeEdit()
	if err != nil {
		return nil, "", err
	}
	if !p.reads([]edit{e}) {
		return nil, "", errors.New("no rewrite of it reads back as the lowered config")
	}
	return []edit{e}, RewroteConfig, nil
}

// reads says whether the document, with es made, holds at p.at a config
// that parses as the lowered one.
func (p *planner) reads(es []edit) bool {
	local := make([]edit, len(es))
	for i, e := range es {
		local[i] = edit{e.start - p.doc.start, e.end - p.doc.start, e.repl}
	}
	js, err := intake.YAMLToJSON(apply(p.doc.t.b, local), 1)
	if err != nil {
		return false
	}
	v, ok := walk(decode(js), append(pathParts(p.at), "spec", "config"))
	if !ok {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	got, err := p.ps.marshalParsed(b)
	return err == nil && bytes.Equal(got, p.want)
}

func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

// deletions finds the keys to delete, besides setting the version, for
// the input to parse as the lowered config: those the lower spec does not
// know (their values empty, or the lowering would not be lossless). ok is
// false when no such set does it.
func (p *planner) deletions() (dels [][]string, ok bool) {
	d := json.NewDecoder(bytes.NewReader(p.raw))
	d.UseNumber()
	var v map[string]any
	if d.Decode(&v) != nil {
		return nil, false
	}
	ign, _ := v["ignition"].(map[string]any)
	if ign == nil {
		return nil, false
	}
	ign["version"] = p.res.Stored.String()
	for range 64 {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		got, err := p.ps.marshalParsed(b)
		if err == nil {
			return dels, bytes.Equal(got, p.want)
		}
		var ie *convert.InvalidError
		if !errors.As(err, &ie) || len(ie.Problems) == 0 {
			return nil, false
		}
		for _, pr := range ie.Problems {
			path := pathParts(pr.Path)
			if !strings.Contains(pr.Message, "unknown key in spec") || len(path) == 0 || !deleteAt(v, path) {
				return nil, false
			}
			dels = append(dels, path)
		}
	}
	return nil, false
}

// deleteAt deletes the key at path in v, reporting whether it was there.
func deleteAt(v any, path []string) bool {
	v, ok := walk(v, path[:len(path)-1])
	if !ok {
		return false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	last := path[len(path)-1]
	if _, ok := m[last]; !ok {
		return false
	}
	delete(m, last)
	return true
}

// versionEdit rewrites ignition.version's value, in the quotes it had.
func (p *planner) versionEdit() (edit, error) {
	ign := child(p.cfg, "ignition")
	v := child(ign, "version")
	if v == nil || v.Kind != yaml.ScalarNode {
		return edit{}, errors.New("no ignition.version scalar")
	}
	t := p.doc.t
	start := t.offset(v.Line, v.Column)
	end := scalarEnd(t.b, start, v.Style, p.doc.json || ign.Style&yaml.FlowStyle != 0)
	if end < 0 {
		return edit{}, errors.New("ignition.version is not a one-line scalar")
	}
	tok := string(t.b[start:end])
	q := ""
	if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		q = tok[:1]
		tok = tok[1 : len(tok)-1]
	}
	if tok != v.Value {
		return edit{}, fmt.Errorf("ignition.version is written %q, read %q", tok, v.Value)
	}
	return edit{p.doc.start + start, p.doc.start + end, []byte(q + p.res.Stored.String() + q)}, nil
}

// deletionEdits deletes each key at dels (paths in the config) with its
// value, whole lines of a block mapping.
func (p *planner) deletionEdits(dels [][]string) ([]edit, error) {
	var out []edit
	for _, path := range dels {
		parent := p.doc.findUnder(p.cfg, path[:len(path)-1]...)
		if parent == nil || parent.Kind != yaml.MappingNode || parent.Style&yaml.FlowStyle != 0 || p.doc.json {
			return nil, errors.New("not a block mapping")
		}
		var key, val *yaml.Node
		for i := 0; i+1 < len(parent.Content); i += 2 {
			if parent.Content[i].Value == path[len(path)-1] {
				key, val = parent.Content[i], parent.Content[i+1]
			}
		}
		if key == nil {
			return nil, errors.New("no such key")
		}
		e, err := p.deletePair(parent, key, val)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// deletePair deletes a key and its value from a block mapping: its whole
// lines, or where the key follows a list item's "- ", up to the next key,
// which moves up beside the "- ".
func (p *planner) deletePair(parent, key, val *yaml.Node) (edit, error) {
	t := p.doc.t
	ko := t.offset(key.Line, key.Column)
	if ko < 0 {
		return edit{}, errors.New("the key is not found")
	}
	if t.firstOnLine(ko) {
		end := p.doc.subtreeEnd(val)
		if end < 0 {
			return edit{}, errors.New("the value's end is not a line's")
		}
		return edit{p.doc.start + t.lineStart(ko), p.doc.start + end, nil}, nil
	}
	prefix := bytes.TrimLeft(t.b[t.lineStart(ko):ko], " ")
	if string(prefix) != "- " || parent.Content[0] != key || len(parent.Content) < 4 {
		return edit{}, errors.New("the key does not start its line")
	}
	next := parent.Content[2]
	no := t.offset(next.Line, next.Column)
	if no < 0 || !t.firstOnLine(no) || t.lineStart(no) == t.lineStart(ko) {
		return edit{}, errors.New("the next key does not start its line")
	}
	return edit{p.doc.start + ko, p.doc.start + no, nil}, nil
}

// subtreeEnd is the document offset just past the last line of n's text
// (a line start, or the end), its trailing blank and comment lines left
// to what follows; -1 when something else follows on that line.
func (d *document) subtreeEnd(n *yaml.Node) int {
	last := n
	for len(last.Content) > 0 {
		last = last.Content[len(last.Content)-1]
	}
	t := d.t
	lo := t.offset(last.Line, last.Column)
	if lo < 0 {
		return -1
	}
	floor := t.lineEnd(lo)
	if last.Kind == yaml.ScalarNode && last.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		if e := quotedEnd(t.b, lo); e > 0 {
			floor = t.lineEnd(e - 1)
		}
	}
	end := len(t.b)
	if i := d.pos[last] + 1; i < len(d.flat) {
		no := t.offset(d.flat[i].Line, d.flat[i].Column)
		if no < 0 {
			return -1
		}
		end = t.lineStart(no)
	}
	if end < floor {
		return -1
	}
	if last.Kind == yaml.ScalarNode && last.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return end // its lines may look like comments
	}
	return t.backOverTrivia(end, floor)
}

// wholeEdit re-encodes spec.config whole: as indented or compact JSON
// where it was written in flow style (JSON), else as a block mapping
// indented as it was.
func (p *planner) wholeEdit() (edit, error) {
	t, n := p.doc.t, p.cfg
	start := t.offset(n.Line, n.Column)
	if start < 0 || n.Kind != yaml.MappingNode {
		return edit{}, errors.New("spec.config is not a mapping")
	}
	if n.Style&yaml.FlowStyle != 0 || p.doc.json {
		end := flowEnd(t.b, start)
		if end < 0 {
			return edit{}, errors.New("spec.config's closing brace was not found")
		}
		repl := p.res.Config
		if bytes.IndexByte(t.b[start:end], '\n') >= 0 {
			var b bytes.Buffer
			if err := json.Indent(&b, p.res.Config, strings.Repeat(" ", t.indentOf(start)), strings.Repeat(" ", p.indentUnit(2))); err != nil {
				return edit{}, err
			}
			repl = b.Bytes()
		}
		return edit{p.doc.start + start, p.doc.start + end, repl}, nil
	}
	end := p.doc.subtreeEnd(n)
	if end < 0 {
		return edit{}, errors.New("spec.config's end is not a line's")
	}
	repl, err := yamlBlock(p.res.Config, n, p.indentUnit(2), compactSeqs(p.doc.root))
	if err != nil {
		return edit{}, err
	}
	if end == len(t.b) && !bytes.HasSuffix(t.b, []byte("\n")) {
		repl = bytes.TrimSuffix(repl, []byte("\n"))
	}
	return edit{p.doc.start + start, p.doc.start + end, repl}, nil
}

// indentUnit is how far the config's first nested mapping is indented
// from its keys, else def.
func (p *planner) indentUnit(def int) int {
	for i := 1; i < len(p.cfg.Content); i += 2 {
		k, v := p.cfg.Content[i-1], p.cfg.Content[i]
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 && v.Line > k.Line {
			if u := v.Column - k.Column; u >= 2 && u <= 8 {
				return u
			}
		}
	}
	return def
}

// compactSeqs says whether the document writes a block sequence's "- "
// at its key's column (kubectl's style and Butane's), as the first one
// found does; true when there is none.
func compactSeqs(root *yaml.Node) bool {
	found, compact := false, true
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if found {
			return
		}
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
			for i := 1; i < len(n.Content); i += 2 {
				if k, v := n.Content[i-1], n.Content[i]; v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
					found, compact = true, v.Column == k.Column
					return
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	return compact
}

// yamlBlock writes a JSON object as a block mapping in place of orig (a
// block mapping): its lines after the first indented to orig's column,
// nested by unit, ending in a newline. Where a key of orig remains, its
// place among its siblings, its comments and its value's style are kept
// (see graft).
func yamlBlock(js []byte, orig *yaml.Node, unit int, compact bool) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(js, &n); err != nil || len(n.Content) == 0 {
		return nil, fmt.Errorf("re-encoding the config: %v", err)
	}
	root := n.Content[0]
	var plain func(*yaml.Node)
	plain = func(x *yaml.Node) {
		x.Style = 0
		for _, c := range x.Content {
			plain(c)
		}
	}
	plain(root)
	graft(root, orig)
	root.Style = 0
	if len(root.Content) > 0 {
		root.Content[0].HeadComment = "" // above the span replaced: kept there
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(unit)
	if compact {
		enc.CompactSeqIndent()
	}
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(b.String(), "\n")
	pad := strings.Repeat(" ", orig.Column-1)
	var out strings.Builder
	for i, ln := range lines {
		if i > 0 && strings.TrimSpace(ln) != "" {
			out.WriteString(pad)
		}
		out.WriteString(ln)
	}
	return []byte(out.String()), nil
}

// graft gives n, the lowered config's node, what orig, the input's node at
// the same path, had beside its value: mapping keys in orig's order (new
// ones after), head and line comments, flow or block style, and a
// scalar's quoting where the value is the same. Foot comments are left:
// those after the config lie outside the bytes replaced.
func graft(n, orig *yaml.Node) {
	if orig == nil || n.Kind != orig.Kind {
		return
	}
	n.HeadComment, n.LineComment = orig.HeadComment, orig.LineComment
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == orig.Value {
			n.Style = orig.Style
		}
	case yaml.SequenceNode:
		n.Style = orig.Style & yaml.FlowStyle
		for i, c := range n.Content {
			if i < len(orig.Content) {
				graft(c, orig.Content[i])
			}
		}
	case yaml.MappingNode:
		n.Style = orig.Style & yaml.FlowStyle
		type pair struct {
			k, v *yaml.Node
			at   int
		}
		var pairs []pair
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			at := len(orig.Content) + i
			for j := 0; j+1 < len(orig.Content); j += 2 {
				if orig.Content[j].Value == k.Value {
					graft(k, orig.Content[j])
					graft(v, orig.Content[j+1])
					at = j
				}
			}
			pairs = append(pairs, pair{k, v, at})
		}
		slices.SortStableFunc(pairs, func(a, b pair) int { return a.at - b.at })
		n.Content = n.Content[:0]
		for _, p := range pairs {
			n.Content = append(n.Content, p.k, p.v)
		}
	}
}

// walk is the value at path in v (object keys, list indexes), false where
// the path leads nowhere.
func walk(v any, path []string) (any, bool) {
	for _, seg := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			i := -1
			fmt.Sscan(seg, &i)
			if i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
