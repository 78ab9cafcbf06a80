package render

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"

	goyaml "sigs.k8s.io/yaml/goyaml.v2"

	"github.com/ignition-mcs/mcs/convert"
)

// yamlItems writes the YAML a rendered name is hashed over one list item
// at a time, and keeps each item's YAML by the item's JSON (its content
// key): pools that take the worker configs share most of their files and
// units, so each is written through the YAML writer once per set rather
// than once per pool. A block sequence item's YAML does not depend on the
// items beside it, only on where its list stands, so each is written as
// the one item of a document that nests its list as the spec does, and
// spliced into the spec's YAML in place of a marker. Tests prove the bytes
// those of sigs.k8s.io/yaml (TestSpecYAMLMatchesLibrary, FuzzSpecYAML).
// Safe for concurrent use; the zero value is ready.
type yamlItems struct {
	mu     sync.Mutex
	marker string                            // "mcsitem<nonce>n": no config can hold one
	items  [len(itemLists)]map[string][]byte // by list: the item's JSON → its YAML
}

// itemLists are the lists written item by item, where most of a config's
// bytes are: the parent key in the config, the list's key, and the YAML
// of the document nesting the list as the spec does, up to its items.
var itemLists = [...]struct{ parent, list, prefix string }{
	{"storage", "files", "config:\n  storage:\n    files:\n"},
	{"systemd", "units", "config:\n  systemd:\n    units:\n"},
}

// itemIndent starts each item's first line: the lists' depth.
const itemIndent = "    - "

// specYAML is specYAML(spec) with contents put back by r, written item by
// item where it can be (see yamlItems); on a nil receiver, or where it
// cannot, as specYAML writes it.
func (c *yamlItems) specYAML(spec MachineConfigSpec, r convert.Restorer) ([]byte, error) {
	if c != nil && specReadable(spec) {
		if tree, chunks, ok := c.tree(spec.Config, r); ok && len(chunks) > 0 {
			doc, err := goyaml.Marshal(hashedSpec(spec, tree, stringsTree(spec.KernelArguments), stringsTree(spec.Extensions)))
			if err == nil {
				if y, ok := c.splice(r.YAML(doc), chunks); ok {
					return y, nil
				}
			}
		}
	}
	y, err := specYAML(spec)
	return r.YAML(y), err
}

// tree is yamlTree(js) with each item of itemLists a marker scalar, and
// each such item's YAML, by marker; ok is false where yamlTree's would not
// be.
func (c *yamlItems) tree(js []byte, r convert.Restorer) (tree any, chunks [][]byte, ok bool) {
	keys, vals, ok := jsonMembers(js)
	if !ok {
		return nil, nil, false
	}
	out := make(map[string]any, len(keys))
	for n, k := range keys {
		raw := vals[n]
		l := slices.IndexFunc(itemLists[:], func(x struct{ parent, list, prefix string }) bool { return x.parent == k })
		var v any
		if l >= 0 {
			v, ok = c.parent(l, raw, &chunks, r)
		} else {
			v, ok = yamlTreeOK(raw)
		}
		if !ok {
			return nil, nil, false
		}
		out[k] = v
	}
	return out, chunks, true
}

// parent is the tree of itemLists[l]'s parent, its items markers.
func (c *yamlItems) parent(l int, raw []byte, chunks *[][]byte, r convert.Restorer) (any, bool) {
	keys, vals, ok := jsonMembers(raw)
	if !ok {
		return yamlTreeOK(raw)
	}
	out := make(map[string]any, len(keys))
	for n, k := range keys {
		sub := vals[n]
		var items [][]byte
		if k == itemLists[l].list {
			items, _ = jsonElements(sub)
		}
		if len(items) == 0 {
			v, ok := yamlTreeOK(sub)
			if !ok {
				return nil, false
			}
			out[k] = v
			continue
		}
		markers := make([]any, len(items))
		for i, it := range items {
			chunk, ok := c.item(l, it, r)
			if !ok {
				return nil, false
			}
			markers[i] = c.markerOf(len(*chunks))
			*chunks = append(*chunks, chunk)
		}
		out[k] = markers
	}
	return out, true
}

func yamlTreeOK(raw []byte) (any, bool) {
	v, ok, err := yamlTree(raw)
	return v, ok && err == nil
}

// item is the YAML of one item of itemLists[l], contents put back: kept
// by its JSON with the contents in place, else written as the one item of
// a document nesting it as the spec does.
func (c *yamlItems) item(l int, raw []byte, r convert.Restorer) ([]byte, bool) {
	key := r.JSON(raw)
	c.mu.Lock()
	y, ok := c.items[l][string(key)]
	c.mu.Unlock()
	if ok {
		return y, true
	}
	v, ok := yamlTreeOK(raw)
	if !ok {
		return nil, false
	}
	lst := itemLists[l]
	doc, err := goyaml.Marshal(map[string]any{"config": map[string]any{lst.parent: map[string]any{lst.list: []any{v}}}})
	if err != nil || !bytes.HasPrefix(doc, []byte(lst.prefix+itemIndent)) {
		return nil, false
	}
	y = r.YAML(doc[len(lst.prefix):])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items[l] == nil {
		c.items[l] = map[string][]byte{}
	}
	c.items[l][string(key)] = y
	return y, true
}

// trim forgets every item's YAML once a list holds more than max.
func (c *yamlItems) trim(max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for l := range c.items {
		if len(c.items[l]) > max {
			c.items[l] = nil
		}
	}
}

// markerOf is the scalar standing for chunk n.
func (c *yamlItems) markerOf(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marker == "" {
		var nonce [8]byte
		_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
		c.marker = "mcsitem" + hex.EncodeToString(nonce[:]) + "n"
	}
	return c.marker + strconv.Itoa(n)
}

// splice puts each chunk in place of its marker's line, which must be a
// list item at the lists' depth; false when one is not found so, or found
// twice. One pass over doc: a search per chunk from the start was
// quadratic, minutes for a config of 100,000 files.
func (c *yamlItems) splice(doc []byte, chunks [][]byte) ([]byte, bool) {
	prefix := []byte("\n" + itemIndent + strings.TrimSuffix(c.markerOf(0), "0"))
	size := len(doc)
	for _, chunk := range chunks {
		size += len(chunk)
	}
	out := make([]byte, 0, size)
	found, last := 0, 0
	seen := make([]bool, len(chunks))
	for i := 0; ; {
		j := bytes.Index(doc[i:], prefix)
		if j < 0 {
			break
		}
		start := i + j + 1 // the line, after its newline
		digits := i + j + len(prefix)
		end := digits
		for end < len(doc) && doc[end] >= '0' && doc[end] <= '9' {
			end++
		}
		n, err := strconv.Atoi(string(doc[digits:end]))
		if err != nil || end >= len(doc) || doc[end] != '\n' || n >= len(chunks) || seen[n] {
			return nil, false
		}
		seen[n] = true
		found++
		out = append(out, doc[last:start]...)
		out = append(out, chunks[n]...)
		last, i = end+1, end
	}
	if found != len(chunks) {
		return nil, false
	}
	return append(out, doc[last:]...), true
}

// jsonMembers splits a JSON object into its keys and raw values in one
// pass, without decoding them; ok is false for anything else, a key with
// an escape, or a key given twice (yamlTree then decides, as
// encoding/json would). Values are checked by whoever decodes them.
func jsonMembers(b []byte) (keys []string, vals [][]byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, nil, skipSpace(b, i+1) == len(b)
	}
	for {
		end, ok := skipString(b, i)
		if !ok || bytes.IndexByte(b[i:end], '\\') >= 0 {
			return nil, nil, false
		}
		key := string(b[i+1 : end-1])
		if slices.Contains(keys, key) {
			return nil, nil, false
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, nil, false
		}
		start := skipSpace(b, i+1)
		stop, ok := skipValue(b, start)
		if !ok {
			return nil, nil, false
		}
		keys, vals = append(keys, key), append(vals, b[start:stop])
		i = skipSpace(b, stop)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return keys, vals, skipSpace(b, i+1) == len(b)
		default:
			return nil, nil, false
		}
	}
}

// jsonElements splits a JSON array into its raw elements in one pass.
func jsonElements(b []byte) (elems [][]byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil, skipSpace(b, i+1) == len(b)
	}
	for {
		stop, ok := skipValue(b, i)
		if !ok {
			return nil, false
		}
		elems = append(elems, b[i:stop])
		i = skipSpace(b, stop)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return elems, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the JSON string starting at b[i].
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the end of the JSON value starting at b[i]: a string,
// or everything up to the bracket closing the one it opens, or a literal
// up to the next delimiter. It checks only what it must to find the end.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	start := i
	for i < len(b) && !literalEnd[b[i]] {
		i++
	}
	return i, i > start
}

var literalEnd = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\n': true, '\r': true}
