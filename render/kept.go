package render

import (
	"crypto/sha256"
	"path/filepath"
	"slices"
	"strings"
)

// decodedData is what decoding one stream of objects (one API object, one
// file) added to a load, kept only when it decoded cleanly: no error and
// no notice. Nothing in it is changed after decoding (a Set's renders
// never modify their inputs), so loads share it.
type decodedData struct {
	configs []*MachineConfig
	docs    []*docRef
	pools   []*MachineConfigPool
	ccs     []*ControllerConfig
	streams []*osImageStream
	// entries are built from configs by the first load's build and
	// reused by the next ones: an entry is a function of its
	// MachineConfig and the parse cache's content-keyed configs, and
	// computes its key and items once (see entry.key).
	entries []*entry
}

// decodedKey is the content key of a stream's decoding: its name (errors
// and positions quote it), whether it comes from an API server (unknown
// fields are warnings then, not errors), and its bytes.
func decodedKey(name string, fromAPIServer bool, data []byte) [32]byte {
	h := sha256.New()
	k := keyer{h}
	k.string(name)
	if fromAPIServer {
		k.string("api")
	} else {
		k.string("file")
	}
	k.bytes(data)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// keeping is one stream's decoding by a loader, kept in its cache (see
// decodedData): taken from there when the cache holds it, else recorded
// as it happens.
type keeping struct {
	l    *Loader
	key  [32]byte
	from loaderMark // how far the loader's lists were before
	ok   bool       // kept at all: a cache, and not Butane
}

// keepingFor starts reading data named p: a Butane file is never kept,
// since the local files it embeds may have changed whatever its bytes.
func keepingFor(l *Loader, p string, data []byte) *keeping {
	k := &keeping{l: l}
	if l.Cache == nil || strings.EqualFold(filepath.Ext(p), ".bu") {
		return k
	}
	k.ok, k.key, k.from = true, decodedKey(p, l.FromAPIServer, data), markOf(l)
	return k
}

// replayed adds the kept decoding's objects to the loader, as decoding
// them again would; false when there is none.
func (k *keeping) replayed() bool {
	if !k.ok {
		return false
	}
	d := k.l.Cache.decodedFor(k.key)
	if d == nil {
		return false
	}
	l := k.l
	for i, mc := range d.configs {
		l.decodedFrom.set(len(l.configs), d, i)
		l.configs = append(l.configs, mc)
		if d.docs[i] != nil {
			if l.docs == nil {
				l.docs = map[*MachineConfig]*docRef{}
			}
			l.docs[mc] = d.docs[i]
		}
	}
	l.pools = append(l.pools, d.pools...)
	l.ccs = append(l.ccs, d.ccs...)
	l.streams = append(l.streams, d.streams...)
	return true
}

// keep keeps what the stream's decoding added to the loader, unless that
// included an error or a notice.
func (k *keeping) keep() {
	if !k.ok {
		return
	}
	l, m := k.l, k.from
	if now := markOf(l); now.notices != m.notices || now.errs != m.errs {
		return
	}
	d := &decodedData{
		configs: slices.Clone(l.configs[m.configs:]),
		pools:   slices.Clone(l.pools[m.pools:]),
		ccs:     slices.Clone(l.ccs[m.ccs:]),
		streams: slices.Clone(l.streams[m.streams:]),
	}
	d.entries = make([]*entry, len(d.configs))
	for i, mc := range d.configs {
		d.docs = append(d.docs, l.docs[mc])
		l.decodedFrom.set(m.configs+i, d, i)
	}
	l.Cache.keepDecoded(k.key, d)
}

// loaderMark is how far a loader's lists were.
type loaderMark struct{ configs, pools, ccs, streams, notices, errs int }

func markOf(l *Loader) loaderMark {
	return loaderMark{len(l.configs), len(l.pools), len(l.ccs), len(l.streams), len(l.notices), len(l.errs.List)}
}

// decodedRef is one MachineConfig of a kept decoding.
type decodedRef struct {
	d *decodedData
	i int
}

// decodedRefs are, for each of a loader's configs, the kept decoding it
// came from (zero when decoded by this load only).
type decodedRefs []decodedRef

func (r *decodedRefs) set(n int, d *decodedData, i int) {
	for len(*r) <= n {
		*r = append(*r, decodedRef{})
	}
	(*r)[n] = decodedRef{d, i}
}

// entry is the entry of l's n-th config, mc: the one built from the same
// kept decoding before, if any.
func (r decodedRefs) entry(n int, mc *MachineConfig, l *Loader) *entry {
	build := func() *entry {
		e := newEntry(mc, l.Cache)
		e.doc = l.docs[mc]
		locate(e.doc, e.problems)
		locate(e.doc, e.warnings)
		return e
	}
	if n < len(r) && r[n].d != nil {
		return l.Cache.entryOf(r[n].d, r[n].i, build)
	}
	return build()
}
