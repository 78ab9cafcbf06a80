package source

import (
	"sync"

	"github.com/ignition-mcs/mcs/internal/fanout"
	"github.com/ignition-mcs/mcs/render"
)

// Renderer renders one source's successive sets, each pool again only when
// the key of its inputs (render.Job.Key) changed: an edit to one custom
// pool's MachineConfig costs one render, however many pools the cluster
// has. A pool whose key did not change keeps its earlier result (and its
// failure), which the server recognises by the same key. The zero value
// is ready; it is safe for concurrent use.
type Renderer struct {
	mu   sync.Mutex
	last map[string]renderedPool
}

type renderedPool struct {
	key render.Key // zero when the pool had no job (its options are invalid)
	res *render.Result
	err error
}

// Render renders every pool of set with opts, side by side and each on
// its own, so a failure is the failing pool's alone: it keeps serving its
// last good render while the others update, as upstream degrades only that
// pool. A pool whose key is the previous call's keeps that call's outcome.
// each, when not nil, is called with every result rendered anew as soon as
// it is, from the rendering goroutines, while the other pools still
// render: a caller can start writing it then.
func (r *Renderer) Render(set *render.Set, opts render.Options, each func(*render.Result)) *Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := set.PoolNames()
	pools := make([]renderedPool, len(names))
	jobs := make([]*render.Job, len(names))
	var todo []int
	for i, name := range names {
		j, err := set.Job(name, opts)
		if err != nil {
			pools[i] = renderedPool{err: err}
			continue
		}
		if prev, ok := r.last[name]; ok && prev.key == j.Key() {
			pools[i] = prev
			continue
		}
		jobs[i] = j
		todo = append(todo, i)
	}
	fanout.Each(len(todo), func(k int) {
		i := todo[k]
		res, err := jobs[i].Render()
		pools[i] = renderedPool{key: jobs[i].Key(), res: res, err: err}
		if err == nil && each != nil {
			each(res)
		}
	})
	r.last = make(map[string]renderedPool, len(names))
	in := &Input{ControllerConfig: set.ControllerConfig()}
	for i, name := range names {
		if pools[i].key != (render.Key{}) {
			r.last[name] = pools[i]
		}
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
