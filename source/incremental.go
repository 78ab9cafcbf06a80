package source

import (
	"sync"

	"github.com/ignition-mcs/mcs/render"
)

// Renderer renders one source's successive sets, each pool again only when
// its inputs (render.Fingerprint) changed: an edit to one custom pool's
// MachineConfig costs one render, however many pools the cluster has. A
// pool whose inputs did not change keeps its earlier *render.Result, the
// same pointer, which tells the server to carry its responses over. The
// zero value is ready; it is safe for concurrent use.
type Renderer struct {
	mu   sync.Mutex
	last map[string]renderedPool
}

type renderedPool struct {
	fp  render.Fingerprint
	res *render.Result
	err error
}

// Render renders set's pools with opts, as RenderPools does, reusing the
// previous call's result for each pool whose fingerprint is unchanged.
func (r *Renderer) Render(set *render.Set, opts render.Options) *Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	fps := set.Fingerprints(opts)
	names := set.PoolNames()
	pools := make([]renderedPool, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		if prev, ok := r.last[name]; ok && prev.fp == fps[name] {
			pools[i] = prev
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := set.RenderPool(name, opts)
			pools[i] = renderedPool{fp: fps[name], res: res, err: err}
		}()
	}
	wg.Wait()
	r.last = make(map[string]renderedPool, len(names))
	in := &Input{ControllerConfig: set.ControllerConfig()}
	for i, name := range names {
		r.last[name] = pools[i]
		if err := pools[i].err; err != nil {
			if in.Failed == nil {
				in.Failed = map[string]error{}
			}
			in.Failed[name] = err
			continue
		}
		in.Results = append(in.Results, pools[i].res)
	}
	return in
}
