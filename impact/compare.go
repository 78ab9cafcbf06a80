package impact

import (
	"context"
	"strconv"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

// Tree is one side of a comparison: a tree's renders, the MachineConfigs
// they came from (for files and lines), and the server that would serve
// them (for what each era receives; nil leaves eras out).
type Tree struct {
	// Path names the tree in the report.
	Path           string
	Results        []*render.Result
	MachineConfigs []*render.MachineConfig
	Pools          []*render.MachineConfigPool
	Server         Server
}

// Options tune a comparison.
type Options struct {
	// Ceiling is the newest spec the booting nodes read; zero is the newest.
	Ceiling convert.Version
}

// Compare says what changes from old to new, pool by pool.
func Compare(ctx context.Context, old, new *Tree, o Options) *Report {
	if o.Ceiling.IsZero() {
		o.Ceiling = convert.Newest
	}
	c := &comparison{old: side(old, "old"), new: side(new, "new"), loc: newLocator(), ceiling: o.Ceiling}
	rep := &Report{SchemaVersion: schemaVersion, Old: old.Path, New: new.Path, Ceiling: o.Ceiling.String(), Pools: []*Pool{}}
	for _, n := range keys(c.old.results, c.new.results) {
		p := c.pool(ctx, n)
		rep.Pools = append(rep.Pools, p)
		h := &rep.Holds
		h.AnyChange = h.AnyChange || p.Status != Unchanged
		h.SpecRaise = h.SpecRaise || p.Spec.Raised
		h.Ceiling = h.Ceiling || p.Spec.AboveCeiling
		for _, e := range p.Eras {
			h.EraLoss = h.EraLoss || e.Change == EraNewlyRefused
		}
	}
	rep.Changed = rep.Holds.AnyChange
	return rep
}

// sideData indexes one tree.
type sideData struct {
	name    string // "old" or "new"
	tree    *Tree
	results map[string]*render.Result
	mcs     map[string]*render.MachineConfig
	pools   map[string]*render.MachineConfigPool
}

func side(t *Tree, name string) *sideData {
	s := &sideData{name: name, tree: t, results: map[string]*render.Result{}, mcs: map[string]*render.MachineConfig{}, pools: map[string]*render.MachineConfigPool{}}
	for _, p := range t.Pools {
		s.pools[p.Metadata.Name] = p
	}
	for _, r := range t.Results {
		s.results[r.Pool] = r
	}
	for _, mc := range t.MachineConfigs {
		s.mcs[mc.Metadata.Name] = mc
	}
	return s
}

type comparison struct {
	old, new *sideData
	loc      *locator
	ceiling  convert.Version
}

func (c *comparison) pool(ctx context.Context, name string) *Pool {
	o, n := c.old.results[name], c.new.results[name]
	p := &Pool{Name: name, Changes: []*Change{}, Eras: []*Era{}}
	switch {
	case o == nil:
		p.Status = Added
	case n == nil:
		p.Status = Removed
	case o.Name == n.Name:
		p.Status = Unchanged
	default:
		p.Status = Changed
	}
	if o != nil {
		p.Rendered.Old, p.Spec.Old = o.Name, o.Spec.String()
	}
	if n != nil {
		p.Rendered.New, p.Spec.New = n.Name, n.Spec.String()
		p.Spec.AboveCeiling = c.ceiling.Less(n.Spec)
	}
	p.Spec.Raised = o != nil && n != nil && o.Spec.Less(n.Spec)
	p.At = c.poolAt(c.new, name)
	if n == nil {
		p.At = c.poolAt(c.old, name)
	}
	c.reasons(p, o, n)
	if p.Status == Changed {
		p.Changes = c.changes(o, n)
	}
	p.Eras = c.eras(ctx, name, o, n)
	p.Overrides = overrides(o, n)
	return p
}

// overrides are the new tree's overrides, marking those the old lacked.
func overrides(o, n *render.Result) []*Override {
	out := []*Override{}
	if n == nil {
		return out
	}
	old := map[string]bool{}
	if o != nil {
		for _, x := range o.Overrides {
			old[x.Kind+" "+x.Name+" "+x.Over+" "+x.By] = true
		}
	}
	for _, x := range n.Overrides {
		at := Location{File: x.BySource, Tree: "new"}
		if i := strings.LastIndexByte(x.BySource, ':'); i > 0 {
			if line, err := strconv.Atoi(x.BySource[i+1:]); err == nil {
				at.File, at.Line = x.BySource[:i], line
			}
		}
		out = append(out, &Override{Message: x.String(), By: x.By, Over: x.Over, At: at, New: !old[x.Kind+" "+x.Name+" "+x.Over+" "+x.By]})
	}
	return out
}

// reasons lists what forces the new spec, marking what the old tree lacked,
// and the old tree's reasons that are gone.
func (c *comparison) reasons(p *Pool, o, n *render.Result) {
	key := func(r render.Reason) string { return r.Path.String() + "\x00" + r.What + "\x00" + r.Version.String() }
	had, has := map[string]bool{}, map[string]bool{}
	if o != nil {
		for _, r := range o.Reasons {
			had[key(r)] = true
		}
	}
	p.Spec.Reasons, p.Spec.Dropped = []*Reason{}, []*Reason{}
	if n != nil {
		for _, r := range n.Reasons {
			has[key(r)] = true
			x := c.reason(c.new, r)
			x.Added = o != nil && !had[key(r)]
			p.Spec.Reasons = append(p.Spec.Reasons, x)
		}
	}
	if o != nil && n != nil {
		for _, r := range o.Reasons {
			if !has[key(r)] {
				p.Spec.Dropped = append(p.Spec.Dropped, c.reason(c.old, r))
			}
		}
	}
}

func (c *comparison) reason(s *sideData, r render.Reason) *Reason {
	return &Reason{
		Field: r.Path.String(), What: r.What, Spec: r.Version.String(), Message: r.Reason.String(),
		MachineConfig: r.MachineConfig, ConfigPath: r.ConfigPath.String(),
		At: c.at(s, r.MachineConfig, r.ConfigPath.Parts()),
	}
}

// at locates a field of a MachineConfig. What the old tree alone has is
// located in the new tree when its MachineConfig is still there (the line
// that remains nearest to it), so a pull request can show it.
func (c *comparison) at(s *sideData, mc string, path []string) Location {
	if mc == "" {
		return Location{}
	}
	if s == c.old {
		if _, ok := c.new.mcs[mc]; ok {
			s = c.new
		}
	}
	m := s.mcs[mc]
	if m == nil || m.Source == "" {
		return Location{}
	}
	line, col := c.loc.line(m.Source, mc, path)
	return Location{File: m.Source, Line: line, Column: col, Tree: s.name}
}

// poolAt locates a MachineConfigPool; a default pool has no file.
func (c *comparison) poolAt(s *sideData, name string) Location {
	p := s.pools[name]
	if p == nil || p.Source == "" || strings.HasPrefix(p.Source, "(") {
		return Location{}
	}
	line, col := c.loc.lineOf(p.Source, "MachineConfigPool", name, nil)
	return Location{File: p.Source, Line: line, Column: col, Tree: s.name}
}

func (c *comparison) eras(ctx context.Context, pool string, o, n *render.Result) []*Era {
	out := []*Era{}
	if c.new.tree.Server == nil || c.old.tree.Server == nil {
		return out
	}
	for _, e := range eraClients() {
		h := ClientHeader(e.UserAgent, e.Accept)
		era := &Era{Spec: e.Spec.String(), Ignition: e.Ignition.String()}
		if o != nil {
			era.Old, _ = Ask(ctx, c.old.tree.Server, pool, h)
		}
		if n != nil {
			era.New, _ = Ask(ctx, c.new.tree.Server, pool, h)
		}
		era.Change = eraChange(era.Old, era.New)
		out = append(out, era)
	}
	return out
}
