package render

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"reflect"
	"slices"
	"strings"
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
// (normalized) under cc: what a render reads of the pool (poolInput), of
// each MachineConfig (entry.key) and of the ControllerConfig
// (controllerConfigInput), and the options.
func renderKey(p *MachineConfigPool, order []*entry, cc *ControllerConfig, stream streamInput, opts Options) Key {
	k := newKeyer()
	k.string("render")
	k.json(opts)
	k.json(controllerConfigInputOf(cc))
	k.json(stream)
	k.json(poolInputOf(p))
	for _, e := range order {
		sum := e.key()
		k.bytes(sum[:])
	}
	return k.sum()
}

// poolInput is what a render reads of a pool, hashed whole: not its
// status, resourceVersion or labels, which a cluster changes all the time,
// nor the spec fields in poolSpecNotRead. A spec field added to the model
// is in it unless listed there (TestKeyCoversEveryField).
type poolInput struct {
	Name, Source string
	Spec         MachineConfigPoolSpec
}

// poolSpecNotRead are the JSON names of the pool spec fields no render
// reads: the node selector picks nodes, not MachineConfigs. A source's
// trigger key of a pool leaves them out too (PoolSpecFieldsRead).
var poolSpecNotRead = []string{"nodeSelector"}

func poolInputOf(p *MachineConfigPool) poolInput {
	in := poolInput{Name: p.Metadata.Name, Source: p.Source, Spec: p.Spec}
	in.Spec.NodeSelector = nil
	return in
}

// PoolSpecFieldsRead are the JSON names of the spec fields of a pool a
// render reads: a source signals a change of a pool when one of them
// changes, and only then (self mode).
func PoolSpecFieldsRead() []string {
	var out []string
	for f := range reflect.TypeFor[MachineConfigPoolSpec]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !slices.Contains(poolSpecNotRead, name) {
			out = append(out, name)
		}
	}
	return out
}

// controllerConfigInput is what a render reads of the ControllerConfig,
// hashed whole; the CAs the server adds are not in it (nodeFilesInput has
// them), so rotating one does not re-render.
type controllerConfigInput struct {
	BaseOSContainerImage, BaseOSExtensionsContainerImage string
	ReleaseImageVersion, ControllerVersion               string
}

func controllerConfigInputOf(cc *ControllerConfig) *controllerConfigInput {
	if cc == nil {
		return nil
	}
	return &controllerConfigInput{cc.BaseOSContainerImage, cc.BaseOSExtensionsContainerImage, cc.ReleaseImageVersion, cc.ControllerVersion}
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
