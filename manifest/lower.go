// Package manifest rewrites MachineConfig manifests (YAML or JSON files) at the lowest Ignition spec able to express them, as admit stores them, keeping every other byte.
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/intake"
	"github.com/ignition-mcs/mcs/render"
)

// How much of a config a rewrite changed.
const (
	RewroteVersion = "version" // ignition.version alone
	RewroteFields  = "fields"  // the version, and keys the lower spec lacks (empty in the input)
	RewroteConfig  = "config"  // spec.config whole, re-encoded: its comments are lost
)

// Object is one MachineConfig of a file, as Lower found it.
type Object struct {
	Label string // "MachineConfig/name (document 2)", with the List item where there is one
	Line  int    // of its spec.config's version (else of the object)
	// Declared is the spec the config declares, Stored the one admit
	// stores it at (equal when it is already at its lowest); Needs is the
	// lowest spec able to express it, Above the fields that need more
	// than the ceiling.
	Declared, Stored, Needs convert.Version
	Above                   []convert.Reason
	AboveLines              []int // the line of each of Above (0: unknown)
	// Lost is, where the config is kept above the ceiling though no field
	// needs more, what a reader of the ceiling would read otherwise (see
	// admit.Result.Lost).
	Lost []convert.Loss
	// Pass says why a config is stored as written (spec 2, refused by the
	// operator, no provably lossless lower spec); nil otherwise.
	Pass *admit.PassError
	// Rewrote is what the rewrite changed (Rewrote* ; "" when nothing).
	Rewrote string
}

// Result is a file after Lower.
type Result struct {
	Data    []byte   // the file, rewritten; the input itself when nothing changed
	Objects []Object // its MachineConfigs with a config, in file order
}

// Changed reports whether Data differs from the input.
func (r *Result) Changed() bool {
	for _, o := range r.Objects {
		if o.Rewrote != "" {
			return true
		}
	}
	return false
}

// Lower rewrites a file's MachineConfigs (every document, List item and
// array element) at the spec admit.Lower stores each config at, the same
// conversion as the webhook, with ceiling (zero: none) deciding Above. Only
// the bytes a lowering changes are rewritten: ignition.version's value, in
// the quotes it had; keys the lower spec lacks whose value was empty, line
// by line; and only where neither proves equivalent (by Ignition's parse),
// spec.config whole, in the style it was written. The result is read back
// and checked before it is returned: everything but spec.config the same
// value, each config parsing to the lowered one.
//
// A file that cannot be read (YAML or JSON syntax), or a config that does
// not parse, is an *render.Errors naming file, line, object and JSON path;
// Result.Data is then the input.
func Lower(file string, data []byte, ceiling convert.Version) (*Result, error) {
	objs, errs := objects(file, data)
	res := &Result{Data: data}
	if len(errs) > 0 {
		return res, &render.Errors{List: errs}
	}
	var edits []edit
	var want []lowered
	ps := parses{}
	for _, o := range objs {
		if !isMachineConfig(o) {
			continue
		}
		cfg, ok := configOf(o)
		if !ok {
			continue
		}
		ob, es, lw, err := lowerObject(file, o, cfg, ceiling, ps)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res.Objects = append(res.Objects, ob)
		edits = append(edits, es...)
		want = append(want, lw)
	}
	if len(errs) > 0 {
		return &Result{Data: data, Objects: res.Objects}, &render.Errors{List: errs}
	}
	if len(edits) == 0 {
		return res, nil
	}
	out := apply(data, edits)
	if err := verify(file, data, out, want, ps); err != nil {
		return &Result{Data: data, Objects: res.Objects}, &render.Errors{List: []*render.Error{{File: file, Message: "not rewritten: " + err.Error(), Err: err}}}
	}
	res.Data = out
	return res, nil
}

// lowered is what verify expects of one MachineConfig.
type lowered struct {
	config []byte // the config stored, compact (convert.Marshal of its parse), or the input's
	parsed bool   // config is a parse's marshal, not the input
}

const mcGroup = "machineconfiguration.openshift.io"

func isMachineConfig(o *objRef) bool {
	g, _, _ := strings.Cut(o.apiVersion, "/")
	return o.kind == render.KindMachineConfig && (o.apiVersion == "" || g == mcGroup)
}

// configOf is the object's spec.config, when it has one.
func configOf(o *objRef) (json.RawMessage, bool) {
	var mc struct {
		Spec struct {
			Config json.RawMessage `json:"config"`
		} `json:"spec"`
	}
	if json.Unmarshal(o.js, &mc) != nil {
		return nil, false
	}
	c := bytes.TrimSpace(mc.Spec.Config)
	return c, len(c) > 0 && !bytes.Equal(c, []byte("null"))
}

// lowerObject lowers one MachineConfig's config and plans the edits that
// store it so.
func lowerObject(file string, o *objRef, cfg []byte, ceiling convert.Version, ps parses) (Object, []edit, lowered, *render.Error) {
	ob := Object{Label: o.label(), Line: o.doc.line}
	cfgNode := o.doc.findUnder(o.node, "spec", "config")
	if v := o.doc.findUnder(cfgNode, "ignition", "version"); v != nil {
		ob.Line = o.doc.fileLine(v)
	} else if o.node != nil {
		ob.Line = o.doc.fileLine(o.node)
	}
	keep := lowered{config: cfg}
	r, err := admit.Lower(cfg, ceiling)
	if r != nil {
		ob.Declared, ob.Stored, ob.Needs, ob.Above, ob.Lost = r.Declared, r.Stored, r.Needs, r.Above, r.Lost
		for _, a := range r.Above {
			line, _ := o.posOf(cfgNode, pathParts(a.Path))
			ob.AboveLines = append(ob.AboveLines, line)
		}
	}
	var pe *admit.PassError
	switch {
	case errors.As(err, &pe) && pe.Kind == admit.PassInvalid:
		return ob, nil, keep, o.configError(file, pe.Err)
	case errors.As(err, &pe):
		ob.Pass = pe
		return ob, nil, keep, nil
	case err != nil:
		return ob, nil, keep, &render.Error{File: file, Line: ob.Line, Object: ob.Label, Path: convert.NewPath("spec", "config"), Message: err.Error(), Err: err}
	case !r.Changed():
		return ob, nil, keep, nil
	}
	want, err := ps.marshalParsed(r.Config)
	if err != nil {
		return ob, nil, keep, &render.Error{File: file, Line: ob.Line, Object: ob.Label, Message: "the lowered config does not parse: " + err.Error(), Err: err}
	}
	p := planner{doc: o.doc, cfg: cfgNode, raw: cfg, res: r, want: want, at: o.at, ps: ps}
	es, how, err := p.plan()
	if err != nil {
		return ob, nil, keep, &render.Error{File: file, Line: ob.Line, Object: ob.Label, Path: convert.NewPath("spec", "config"), Message: "cannot rewrite in place: " + err.Error(), Err: err}
	}
	ob.Rewrote = how
	return ob, es, lowered{config: want, parsed: true}, nil
}

// findUnder is the node at path under n, or nil.
func (d *document) findUnder(n *yaml.Node, path ...string) *yaml.Node {
	for _, seg := range path {
		if n == nil {
			return nil
		}
		n = child(n, seg)
	}
	return n
}

// configError places a config's parse problems in the file.
func (o *objRef) configError(file string, err error) *render.Error {
	x := &render.Error{File: file, Object: o.label(), Path: convert.NewPath("spec", "config"), Message: err.Error(), Err: fmt.Errorf("%w: %w", render.ErrInvalid, err)}
	var ie *convert.InvalidError
	if errors.As(err, &ie) && len(ie.Problems) > 0 {
		p := ie.Problems[0]
		x.Path = convert.NewPath("spec", "config").Append(p.Path.Path...)
		x.Message = p.Message
		if len(ie.Problems) > 1 {
			x.Message += fmt.Sprintf(" (and %d more problems: %s)", len(ie.Problems)-1, err)
		}
	}
	x.Line, x.Column = o.posOf(o.node, pathParts(x.Path))
	return x
}

// posOf is the file's line and column of the deepest part of path under n
// present in the document (a key's), else of n, else of the document's
// start (column 0: unknown).
func (o *objRef) posOf(n *yaml.Node, path []string) (line, col int) {
	if n == nil {
		return o.doc.line, 0
	}
	line, col = n.Line, n.Column
	for _, seg := range path {
		k, v := intake.Child(n, seg)
		if v == nil {
			break
		}
		line, col, n = k.Line, k.Column, v
	}
	return o.doc.line + line - 1, col
}

// pathParts are a path's parts as text (Ignition's keys are a string type
// of their own).
func pathParts(p convert.Path) []string {
	out := make([]string, len(p.Path))
	for i, x := range p.Path {
		out[i] = fmt.Sprint(x)
	}
	return out
}

// child is the value seg names in a mapping (its key node for a key
// wanted), or the item it indexes in a sequence; nil when absent.
func child(n *yaml.Node, seg string) *yaml.Node {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Kind == yaml.ScalarNode && n.Content[i].Value == seg {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if fmt.Sprint(i) == seg {
				return c
			}
		}
	}
	return nil
}

// parses holds one Lower's parses of configs, by content: the input read
// with the version set, its splice read back and the file verified are
// most often the same JSON.
type parses map[[sha256.Size]byte]parsed

type parsed struct {
	b   []byte
	err error
}

// marshalParsed is a config's parse, marshalled: two configs Ignition
// reads alike marshal alike.
func (ps parses) marshalParsed(raw []byte) ([]byte, error) {
	k := sha256.Sum256(raw)
	if p, ok := ps[k]; ok {
		return p.b, p.err
	}
	b, err := marshalParsed(raw)
	ps[k] = parsed{b, err}
	return b, err
}

func marshalParsed(raw []byte) ([]byte, error) {
	p, err := convert.Parse(raw)
	if err != nil {
		return nil, err
	}
	b, err := convert.Marshal(p.Config, false)
	if err != nil {
		return nil, err
	}
	return append([]byte(p.Version.String()+" "), b...), nil
}

// edit replaces the file's bytes [start, end) with repl.
type edit struct {
	start, end int
	repl       []byte
}

// apply makes the edits, which do not overlap.
func apply(data []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	var out bytes.Buffer
	at := 0
	for _, e := range edits {
		out.Write(data[at:e.start])
		out.Write(e.repl)
		at = e.end
	}
	out.Write(data[at:])
	return out.Bytes()
}
