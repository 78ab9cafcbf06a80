package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
)

// maxRenderedSize is upstream's limit on a rendered MachineConfig, in bytes
// of JSON: 1.5 MiB, what etcd stores in one object.
const maxRenderedSize = 1572864

// sizeProblem says why mc, rendered from order, cannot be stored, or
// returns nil. It is blamed on the MachineConfig whose Ignition config is
// largest, as that is the one to shrink, and names the next largest.
func sizeProblem(mc *MachineConfig, order []*entry, pool string) *Error {
	n, err := encodedSize(mc)
	if err != nil {
		return &Error{Object: KindMachineConfigPool + "/" + pool, Path: convert.NewPath(), Message: "encoding the rendered MachineConfig: " + err.Error(), Err: err}
	}
	if n <= maxRenderedSize {
		return nil
	}
	big := slices.Clone(order)
	slices.SortStableFunc(big, func(a, b *entry) int { return len(b.mc.Spec.Config) - len(a.mc.Spec.Config) })
	var sizes []string
	for _, e := range big[:min(3, len(big))] {
		sizes = append(sizes, fmt.Sprintf("%s %d", e.mc.Metadata.Name, len(e.mc.Spec.Config)))
	}
	top := big[0]
	return &Error{File: top.mc.Source, Line: top.doc.line(convert.NewPath("spec", "config")), Object: KindMachineConfig + "/" + top.mc.Metadata.Name, Path: convert.NewPath("spec", "config"),
		Message: fmt.Sprintf("pool %s's rendered MachineConfig %s would be %d bytes of JSON, above the limit of %d (1.5 MiB: what etcd stores in one object; OpenShift's limit too). "+
			"Largest Ignition configs, in bytes of JSON: %s. Shrink them: compress large files (contents.compression: gzip) or ship them another way (a container image)",
			pool, mc.Metadata.Name, n, maxRenderedSize, strings.Join(sizes, ", ")),
		Err: ErrInvalid}
}

// encodedSize is len(json.Marshal(mc)) without encoding the config again:
// it is compact JSON already, so it is written as it is.
func encodedSize(mc *MachineConfig) (int, error) {
	shell := *mc
	shell.Spec.Config = json.RawMessage("0")
	b, err := json.Marshal(shell)
	if err != nil {
		return 0, err
	}
	return len(b) - 1 + len(mc.Spec.Config), nil
}

// tooLarge refuses a MachineConfig over maxRenderedSize before anything
// parses its config: the API server stores none so large, no pool could
// render it, and parsing and validating 100,000 files first took a minute
// and half a gigabyte. Its size is that of its compact JSON.
func tooLarge(o rawObject) *Error {
	n := len(o.JSON)
	if n <= maxRenderedSize {
		return nil
	}
	var compact bytes.Buffer
	if json.Compact(&compact, o.JSON) == nil {
		n = compact.Len()
	}
	if n <= maxRenderedSize {
		return nil
	}
	// No line: finding one parses the whole document as YAML, the cost
	// refused here.
	return &Error{File: o.File, Object: KindMachineConfig + "/" + o.Name, Path: convert.NewPath("spec", "config"), Err: ErrInvalid, Message: fmt.Sprintf("MachineConfig is %d bytes of JSON, above the limit of %d (1.5 MiB: what etcd stores in one object; the API server refuses a larger one, and no pool could render it); not parsed. "+
		"Shrink it: compress large files (contents.compression: gzip) or ship them another way (a container image)", n, maxRenderedSize)}
}

// yamlTooLarge refuses a YAML document that is one MachineConfig far over
// maxRenderedSize before it is converted to JSON, which takes some forty
// times its size in memory (325 MB for 100,000 files): its bytes other
// than spaces and comments are over twice the limit. Each becomes at least
// one byte of JSON, but for the rare forms JSON writes shorter (0x1F, an
// escape, an anchor), hence twice. A List, which may hold many objects, is
// converted and its MachineConfigs checked one by one (tooLarge).
func yamlTooLarge(file string, doc []byte, first int) *Error {
	if len(doc) <= 2*maxRenderedSize {
		return nil
	}
	name, ok := topMachineConfig(doc)
	if !ok {
		return nil
	}
	n := yamlFloor(doc)
	if n <= 2*maxRenderedSize {
		return nil
	}
	return &Error{File: file, Line: first, Object: KindMachineConfig + "/" + name, Path: convert.NewPath("spec", "config"), Err: ErrInvalid, Message: fmt.Sprintf(
		"MachineConfig's YAML is %d bytes, %d besides spaces and comments: its JSON would be far above the limit of %d (1.5 MiB: what etcd stores in one object; the API server refuses a larger one, and no pool could render it); not parsed. "+
			"Shrink it: compress large files (contents.compression: gzip) or ship them another way (a container image)", len(doc), n, maxRenderedSize)}
}

// topMachineConfig says whether a YAML document is one MachineConfig, by
// its lines at the left margin, and gives its name when found.
func topMachineConfig(doc []byte) (name string, ok bool) {
	inMeta := false
	for line := range bytes.Lines(doc) {
		line = bytes.TrimRight(line, " \t\r\n")
		switch {
		case bytes.Equal(line, []byte("kind: MachineConfig")):
			ok = true
		case bytes.HasPrefix(line, []byte("items:")):
			return "", false
		case len(line) > 0 && line[0] != ' ' && line[0] != '#':
			inMeta = bytes.Equal(line, []byte("metadata:"))
		case inMeta && bytes.HasPrefix(line, []byte("  name: ")):
			name = strings.Trim(string(line[len("  name: "):]), `"'`)
		}
	}
	return name, ok
}

// yamlFloor counts a YAML document's bytes other than spaces, comments,
// anchors and tags.
func yamlFloor(doc []byte) int {
	n := 0
	for line := range bytes.Lines(doc) {
		for _, f := range bytes.Fields(line) {
			if f[0] == '#' {
				break // a comment: # at a line's start or after a space
			}
			if f[0] == '&' || f[0] == '!' {
				continue
			}
			n += len(f)
		}
	}
	return n
}
