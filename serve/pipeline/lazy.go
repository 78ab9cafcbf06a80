package pipeline

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

// A pool's rendered spec is encoded before its snapshot is served; the
// others on first use: the first request for them, /status, or the fill
// that follows every swap. So a render that changed many pools serves
// their new bytes after encoding one spec each, not eight.

// specSlot is one spec version of a pool's config, encoded once.
type specSlot struct {
	once sync.Once
	resp *Response // nil when the version cannot express the config
	err  error
}

// encoding is what a pool needs to encode the specs not yet encoded; the
// pool drops it once every spec is, with the Encoder's copies of contents.
type encoding struct {
	enc      *convert.Encoder
	res      *render.Result
	contents contents
	left     atomic.Int32
}

// versionIndex is v's place in convert.OutputVersions, or -1.
func versionIndex(v convert.Version) int {
	for i, o := range convert.OutputVersions {
		if o == v {
			return i
		}
	}
	return -1
}

// response returns the response at v, encoding it on first use, or nil
// when v cannot express the pool's config (see blocked).
func (p *Pool) Response(v convert.Version) *Response {
	i := versionIndex(v)
	if i < 0 {
		return nil
	}
	s := &p.specs[i]
	s.once.Do(func() { p.encode(i) })
	return s.resp
}

// blocked is why v cannot be served; nil when it can.
func (p *Pool) Blocked(v convert.Version) error {
	if i := versionIndex(v); i >= 0 && p.Response(v) == nil {
		return p.specs[i].err
	}
	return nil
}

// lowest is the oldest spec that has a response (the spec a client must
// read at least); zero when none.
func (p *Pool) Lowest() convert.Version {
	for _, v := range convert.OutputVersions {
		if p.Response(v) != nil {
			return v
		}
	}
	return convert.Version{}
}

// encode fills slot i; called once per slot, under its sync.Once.
func (p *Pool) encode(i int) {
	e := p.build.Load() // not nil: this slot is not encoded yet
	v, s := convert.OutputVersions[i], &p.specs[i]
	defer func() {
		// A panic (a bug) must not leave the slot empty and the encoder
		// held for ever: the spec is reported unservable, like an error.
		if r := recover(); r != nil {
			s.resp, s.err = nil, fmt.Errorf("encoding pool %s at spec %s failed: %v", p.name, v, r)
		}
		if e.left.Add(-1) == 0 {
			p.build.Store(nil)
		}
	}()
	segs, err := e.enc.EncodeSegments(v, func(cfg *convert.Config) error { return servedConfig(cfg, e.res, v) })
	if err != nil {
		s.err = err
	} else {
		b, sum := newBody(segs)
		s.resp = newResponse(v, b, sum)
	}
}

// Fill encodes every spec of every pool of s not encoded yet, one at a
// time: it is background work, and must leave the other cores to requests
// and to the next render.
func (s *Snapshot) Fill() { s.fillWhile(func() bool { return true }) }

// fillWhile is Fill, stopping before a pool once served reports false: a
// snapshot replaced meanwhile needs no more bodies (the pools it shares
// with its successor are that one's to fill), and fills of successive
// snapshots must not pile up beside the render of the next one.
func (s *Snapshot) fillWhile(served func() bool) {
	for _, name := range s.names {
		if !served() {
			return
		}
		if p := s.pools[name]; p.build.Load() != nil {
			for _, v := range convert.OutputVersions {
				p.Response(v)
			}
		}
	}
}
