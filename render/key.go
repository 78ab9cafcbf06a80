package render

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
)

// Key identifies everything a render reads: two renders with the same key
// give the same Result. Every cache and every "changed?" downstream (the
// sources' incremental renders, the server's carry-over, the controller)
// compares keys, never pointers.
type Key [sha256.Size]byte

// keyer builds a Key field by field, each with its length, so that fields
// cannot run together.
type keyer struct{ h hash.Hash }

func newKeyer() keyer { return keyer{sha256.New()} }

func (k keyer) bytes(b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	k.h.Write(n[:])
	k.h.Write(b)
}

func (k keyer) string(s string) { k.bytes([]byte(s)) }

// json hashes v's JSON; what cannot be encoded is hashed as its error,
// which no render of it would get past either.
func (k keyer) json(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("error: " + err.Error())
	}
	k.bytes(b)
}

func (k keyer) sum() Key {
	var out Key
	k.h.Sum(out[:0])
	return out
}

// keyOf is the key of byte fields (the node files' contents, a token list),
// each with its length: for inputs that are bytes already.
func keyOf(fields ...[]byte) Key {
	k := newKeyer()
	for _, f := range fields {
		k.bytes(f)
	}
	return k.sum()
}

// key hashes the inputs of a render of pool p selecting order with opts
// (normalized) under cc: what a render reads of the pool (not its status,
// resourceVersion or labels, which a cluster changes all the time), of each
// MachineConfig (entry.key) and of the ControllerConfig, and the options.
func renderKey(p *MachineConfigPool, order []*entry, cc *ControllerConfig, stream streamInput, opts Options) Key {
	k := newKeyer()
	k.string("render")
	k.json(opts)
	controllerConfigKey(k, cc)
	k.json(stream)
	k.string(p.Metadata.Name)
	k.string(p.Source)
	k.json(p.Spec.MachineConfigSelector)
	k.json(p.Spec.OSImageStream)
	for _, e := range order {
		sum := e.key()
		k.bytes(sum[:])
	}
	return k.sum()
}

// key hashes what a render reads of the MachineConfig (its name, labels,
// annotations and whole spec, not the metadata a cluster bumps on every
// write: resourceVersion, generation, managedFields) with where it came
// from and what loading found, which errors and provenance quote. It is
// computed once however many pools select the MachineConfig.
func (e *entry) key() Key {
	e.keyOnce.Do(func() {
		k := newKeyer()
		machineConfigKey(k, e.mc)
		if e.generated {
			k.string("generated")
		}
		if e.doc != nil {
			k.string("doc") // the lines problems and reasons name
			k.bytes(e.doc.key[:])
		}
		for _, list := range [][]*Error{e.problems, e.warnings} {
			k.string("errors")
			for _, err := range list {
				k.string(err.Error())
			}
		}
		e.sum = k.sum()
	})
	return e.sum
}

func machineConfigKey(k keyer, mc *MachineConfig) {
	m := &mc.Metadata
	k.string(m.Name)
	k.json(m.Labels)
	k.json(m.Annotations)
	k.json(mc.Spec)
	k.string(mc.Source)
}

// controllerConfigKey hashes the fields a render reads; the CAs the server
// adds are not among them (the node files' key has them), so rotating one
// does not re-render.
func controllerConfigKey(k keyer, cc *ControllerConfig) {
	if cc == nil {
		k.bytes(nil)
		return
	}
	for _, f := range []string{cc.BaseOSContainerImage, cc.BaseOSExtensionsContainerImage, cc.ReleaseImageVersion, cc.ControllerVersion} {
		k.string(f)
	}
}

// renderedKey is the key of FromRendered's inputs.
func renderedKey(pool string, mc *MachineConfig, sources []string, opts Options) Key {
	k := newKeyer()
	k.string("rendered")
	k.json(opts)
	k.string(pool)
	machineConfigKey(k, mc)
	k.json(sources)
	return k.sum()
}
