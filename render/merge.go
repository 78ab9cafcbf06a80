package render

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/coreos/ignition/v2/config/merge"
	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/convert"
)

// mergeOrder sorts a pool's MachineConfigs as upstream does: those with role
// worker first, then the rest, each group by name; later ones win. That is
// how a custom pool's configs override the worker configs it also selects.
func mergeOrder(members []*entry) []*entry {
	var workers, others []*entry
	for _, e := range members {
		if e.mc.Metadata.Labels[roleLabel] == "worker" {
			workers = append(workers, e)
		} else {
			others = append(others, e)
		}
	}
	byName := func(a, b *entry) int { return strings.Compare(a.mc.Metadata.Name, b.mc.Metadata.Name) }
	slices.SortStableFunc(workers, byName)
	slices.SortStableFunc(others, byName)
	return append(workers, others...)
}

// unlabelled refuses a selected MachineConfig that has no labels at all, as
// upstream's MergeMachineConfigs (pkg/controller/common/helpers.go) does
// before it sorts by role. Only a selector of NotIn or DoesNotExist terms
// selects one. As there, an empty labels map read from a file counts as
// labels; in a cluster the API server stores it as none.
func unlabelled(e *entry) *Error {
	if e.mc.Metadata.Labels != nil {
		return nil
	}
	return &Error{File: e.mc.Source, Object: KindMachineConfig + "/" + e.mc.Metadata.Name, Path: convert.NewPath("metadata", "labels"),
		Message: fmt.Sprintf("a pool selects MachineConfig %s, which has no labels (upstream: cannot find label in MachineConfig %s); give it the role label of its pool", e.mc.Metadata.Name, e.mc.Metadata.Name),
		Err:     ErrInvalid}
}

// merged is the Ignition merge of a pool, with what is needed to say which
// MachineConfig supplied any value in it.
type merged struct {
	order []*entry
	base  int   // index in order of the first config; -1 when none has one
	steps []int // the index in order of each config merged onto the base, in order
	cfg   convert.Config

	trOnce sync.Once
	trs    []merge.Transcript // Ignition's transcript of each step, made on first use
}

// mergeIgnition merges the configs in order with Ignition's own merge (files,
// directories and links by path, units and users by name; the child wins),
// keeping each step's transcript for provenance. The cached configs are
// never modified: the merge builds new values, and the fixes below copy
// before they write.
//
// The worker configs, which merge first (mergeOrder), are merged once per
// set (shared): every custom pool starts from them.
func mergeIgnition(order []*entry, shared *mergeCache) *merged {
	m := &merged{order: order, base: -1}
	start := 0
	if n := workerPrefix(order); n > 1 && shared != nil {
		p := shared.prefix(order[:n])
		m.base, m.steps, m.cfg = p.base, slices.Clone(p.steps), p.cfg
		start = n
	}
	m.mergeFrom(start)
	mergedFixes(&m.cfg)
	return m
}

// mergedFixes are upstream's two fixes to the merged files, and the
// version of the result. Ignition writes no file that exists unless
// overwrite is true, while the daemon always does: files that do not say
// get overwrite true. And the empty compression that childCompression
// planted (or an input wrote) means none.
func mergedFixes(cfg *convert.Config) {
	cfg.Ignition.Version = convert.Newest.String()
	files := slices.Clone(cfg.Storage.Files)
	for i := range files {
		f := &files[i]
		if c := f.Contents.Compression; c != nil && *c == "" {
			f.Contents.Compression = nil
		}
		if f.Overwrite == nil {
			t := true
			f.Overwrite = &t
		}
	}
	cfg.Storage.Files = files
}

// mergeFrom merges m.order[start:] onto what m holds.
func (m *merged) mergeFrom(start int) {
	for i := start; i < len(m.order); i++ {
		e := m.order[i]
		if e.cfg == nil {
			continue
		}
		if m.base < 0 {
			m.base, m.cfg = i, *e.cfg
			continue
		}
		m.cfg = mergeValues(reflect.ValueOf(m.cfg), reflect.ValueOf(mergeChild(e))).Interface().(convert.Config)
		m.steps = append(m.steps, i)
	}
}

// mergeChild is the config of e as it is merged onto those before it.
func mergeChild(e *entry) convert.Config {
	child := *e.cfg
	child.Storage.Files = childCompression(child.Storage.Files)
	return child
}

// transcripts are Ignition's own transcripts of the merge's steps: the
// merge made again with them, which only naming the origin of a value
// needs (an error, a reason for a newer spec).
func (m *merged) transcripts() []merge.Transcript {
	m.trOnce.Do(func() {
		if m.base < 0 {
			return
		}
		cfg := *m.order[m.base].cfg
		for _, member := range m.steps {
			res, tr := merge.MergeStructTranscribe(cfg, mergeChild(m.order[member]))
			cfg = res.(convert.Config)
			m.trs = append(m.trs, tr)
		}
	})
	return m.trs
}

// workerPrefix is how many configs at the head of a merge order have role
// worker.
func workerPrefix(order []*entry) int {
	n := 0
	for n < len(order) && order[n].mc.Metadata.Labels[roleLabel] == "worker" {
		n++
	}
	return n
}

// mergeCache shares the merge of the worker configs between the pools of a
// set, by the content keys of the configs merged: a worker edit in a
// cluster of a hundred custom pools merges the worker configs once, not a
// hundred times. The merged values are never modified (see mergeIgnition).
type mergeCache struct {
	mu sync.Mutex
	by map[Key]*mergedPrefix
}

type mergedPrefix struct {
	once  sync.Once
	base  int
	steps []int
	cfg   convert.Config
}

// prefix returns the merge of order (the head of a pool's merge order),
// merging it on first use.
func (c *mergeCache) prefix(order []*entry) *mergedPrefix {
	k := newKeyer()
	for _, e := range order {
		sum := e.key()
		k.bytes(sum[:])
	}
	key := k.sum()
	c.mu.Lock()
	p := c.by[key]
	if p == nil {
		if c.by == nil {
			c.by = map[Key]*mergedPrefix{}
		}
		p = &mergedPrefix{}
		c.by[key] = p
	}
	c.mu.Unlock()
	p.once.Do(func() {
		m := &merged{order: order, base: -1}
		m.mergeFrom(0)
		p.base, p.steps, p.cfg = m.base, m.steps, m.cfg
	})
	return p
}

// writtenModes are the special bits of directory modes that the merged
// config holds masked, as its inputs wrote them: for each directory, the
// last config in merge order to give it a mode decides, as in Ignition's
// merge, so a later mode without the bits leaves none.
func writtenModes(order []*entry) convert.WrittenModes {
	var out convert.WrittenModes
	for _, e := range order {
		if e.cfg == nil {
			continue
		}
		for _, d := range e.cfg.Storage.Directories {
			if d.Mode == nil {
				continue
			}
			m, ok := e.written[d.Path]
			switch {
			case ok && out == nil:
				out = convert.WrittenModes{d.Path: m}
			case ok:
				out[d.Path] = m
			default:
				delete(out, d.Path)
			}
		}
	}
	return out
}

// childCompression works around Ignition's merge keeping the parent's
// compression when the child file says none: a child that replaces gzip
// contents with plain ones would be decompressed on the node and fail. As
// upstream does, the child's absent compression is made an explicit empty
// one, which wins the merge and is removed afterwards. Unlike upstream, a
// child that sets no contents keeps the parent's compression, because it
// keeps the parent's (possibly compressed) contents too.
func childCompression(files []types.File) []types.File {
	var out []types.File
	for i, f := range files {
		if f.Contents.Compression == nil && f.Contents.Source != nil {
			if out == nil {
				out = slices.Clone(files)
			}
			empty := ""
			out[i].Contents.Compression = &empty
		}
	}
	if out == nil {
		return files
	}
	return out
}

// origin returns the MachineConfig (index in order) that supplied the value
// at path p of the merged config, and the path of that value inside its
// config. A path the transcripts do not record (an empty value) is
// attributed through its nearest recorded parent.
func (m *merged) origin(p []any) (int, []any) {
	for n := len(p); n >= 0; n-- {
		if member, q, ok := m.trace(p[:n]); ok {
			return member, append(slices.Clip(q), p[n:]...)
		}
	}
	return m.base, p
}

// trace follows p back through the merge steps: to the child of the last
// step that wrote it, or through the parent to earlier steps, down to the
// base config.
func (m *merged) trace(p []any) (int, []any, bool) {
	trs := m.transcripts()
	for k := len(m.steps) - 1; k >= 0; k-- {
		var parent []any
		found := false
		for _, mp := range trs[k].Mappings {
			if !pathEqual(mp.To.Path, p) {
				continue
			}
			if mp.From.Tag == merge.TAG_CHILD {
				return m.steps[k], mp.From.Path, true
			}
			parent, found = mp.From.Path, true
		}
		if !found {
			return 0, nil, false
		}
		p = parent
	}
	if m.base < 0 {
		return 0, nil, false
	}
	return m.base, p, true
}

func pathEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// provenance says which MachineConfig supplied each file, directory, link,
// unit and user of the merged config: the last one in merge order that
// declares it, which is the one whose entry won the merge, but for a file
// whose contents an earlier one wrote and a later one only amended (a
// mode): the one whose contents are rendered. Kernel arguments
// are credited to the first MachineConfig that adds them.
func provenance(order []*entry, cfg *convert.Config) Provenance {
	// Files, directories and links share one key space, their path, as in
	// Ignition's merge: a later node of any kind replaces an earlier one.
	nodes, units, users := map[string]string{}, map[string]string{}, map[string]string{}
	kargs, kinds := map[string]string{}, map[string]string{}
	for _, e := range order {
		name := e.mc.Metadata.Name
		for _, a := range e.mc.Spec.KernelArguments {
			if _, ok := kargs[a]; !ok {
				kargs[a] = name
			}
		}
		if e.cfg == nil {
			continue
		}
		c := e.cfg
		for _, f := range c.Storage.Files {
			creditContents(nodes, kinds, "file", f.Path, f.Contents.Source != nil, name)
		}
		for _, d := range c.Storage.Directories {
			creditContents(nodes, kinds, "directory", d.Path, true, name)
		}
		for _, l := range c.Storage.Links {
			creditContents(nodes, kinds, "link", l.Path, true, name)
		}
		credit(units, c.Systemd.Units, name)
		credit(users, c.Passwd.Users, name)
		for _, a := range c.KernelArguments.ShouldExist {
			if _, ok := kargs[string(a)]; !ok {
				kargs[string(a)] = name
			}
		}
	}
	p := Provenance{
		Files:           keep(nodes, cfg.Storage.Files),
		Directories:     keep(nodes, cfg.Storage.Directories),
		Links:           keep(nodes, cfg.Storage.Links),
		Units:           keep(units, cfg.Systemd.Units),
		Users:           keep(users, cfg.Passwd.Users),
		KernelArguments: kargs,
	}
	if len(kargs) == 0 {
		p.KernelArguments = nil
	}
	return p
}

// keyed is an Ignition list entry with its merge key (a path or a name).
type keyed interface{ Key() string }

// credit records name as the source of every entry of list.
func credit[T keyed](by map[string]string, list []T, name string) {
	for _, x := range list {
		by[x.Key()] = name
	}
}

// creditContents credits name with the node at path unless it is already
// a node of the same kind and name's entry writes no contents: a later
// entry that only amends an earlier one's (a mode) does not supply what is
// rendered. A node of another kind replaces the earlier one.
func creditContents(by, kinds map[string]string, kind, path string, contents bool, name string) {
	if _, ok := by[path]; ok && kinds[path] == kind && !contents {
		return
	}
	by[path], kinds[path] = name, kind
}

// keep is the sources of the entries the merged config holds.
func keep[T keyed](all map[string]string, present []T) map[string]string {
	if len(present) == 0 {
		return nil
	}
	out := make(map[string]string, len(present))
	for _, x := range present {
		out[x.Key()] = all[x.Key()]
	}
	return out
}
