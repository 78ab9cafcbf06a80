package render

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
)

// Fingerprint identifies everything one pool's render reads: the pool
// object, its MachineConfigs (names and contents, in merge order, with what
// loading found wrong with them), the ControllerConfig fields a render uses
// and the options. Two renders of pools with the same fingerprint give the
// same result, so a source can keep the older one.
type Fingerprint [sha256.Size]byte

// Fingerprints returns the fingerprint of every pool of the set rendered
// with opts. Each MachineConfig is hashed once, however many pools select it.
func (s *Set) Fingerprints(opts Options) map[string]Fingerprint {
	opts, _ = opts.Normalized() // bad options fail every render alike
	common := sha256.New()
	writeJSON(common, opts)
	writeControllerConfig(common, s.cc)
	base := common.Sum(nil)

	sums := make(map[*entry][]byte, len(s.entries))
	out := make(map[string]Fingerprint, len(s.pools))
	for _, p := range s.pools {
		h := sha256.New()
		h.Write(base)
		// What a render reads of the pool: not its status, resourceVersion
		// or labels, which a cluster changes all the time.
		writeField(h, []byte(p.Metadata.Name))
		writeField(h, []byte(p.Source))
		writeJSON(h, p.Spec.MachineConfigSelector)
		sel := p.Spec.MachineConfigSelector
		var members []*entry
		for _, e := range s.entries {
			if sel.matches(e.mc.Metadata.Labels) {
				members = append(members, e)
			}
		}
		for _, e := range mergeOrder(members) {
			sum, ok := sums[e]
			if !ok {
				sum = e.sum()
				sums[e] = sum
			}
			writeField(h, sum)
		}
		var fp Fingerprint
		h.Sum(fp[:0])
		out[p.Metadata.Name] = fp
	}
	return out
}

// sum hashes what a render reads of the MachineConfig (its name, labels,
// annotations and whole spec, not the metadata a cluster bumps on every
// write: resourceVersion, generation, managedFields) with where it came
// from and what loading found, which errors and provenance quote.
func (e *entry) sum() []byte {
	h := sha256.New()
	m := &e.mc.Metadata
	writeField(h, []byte(m.Name))
	writeJSON(h, m.Labels)
	writeJSON(h, m.Annotations)
	writeJSON(h, e.mc.Spec)
	writeField(h, []byte(e.mc.Source))
	if e.generated {
		writeField(h, []byte("generated"))
	}
	if e.doc != nil {
		e.doc.key(h) // lines quoted by reasons and overrides
	}
	for _, list := range [][]*Error{e.problems, e.warnings} {
		writeField(h, []byte("errors"))
		for _, err := range list {
			writeField(h, []byte(err.Error()))
		}
	}
	return h.Sum(nil)
}

// writeControllerConfig hashes the fields a render reads; the CAs the server
// adds are not among them, so rotating one does not re-render.
func writeControllerConfig(h hash.Hash, cc *ControllerConfig) {
	if cc == nil {
		writeField(h, nil)
		return
	}
	for _, f := range []string{cc.BaseOSContainerImage, cc.BaseOSExtensionsContainerImage, cc.ReleaseImageVersion, cc.ControllerVersion} {
		writeField(h, []byte(f))
	}
}

// writeJSON hashes v's JSON; what cannot be encoded is hashed as its error,
// which no render of it would get past either.
func writeJSON(h hash.Hash, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("error: " + err.Error())
	}
	writeField(h, b)
}

// writeField hashes b with its length, so that fields cannot run together.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
