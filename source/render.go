package source

import (
	"sync"

	"github.com/ignition-mcs/mcs/render"
)

// RenderPools renders every pool of set in parallel, one by one, so a
// failure is the failing pool's alone: it keeps serving its last good render
// while the others update, as upstream degrades only that pool.
func RenderPools(set *render.Set, opts render.Options) *Input {
	names := set.PoolNames()
	results := make([]*render.Result, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = set.RenderPool(name, opts)
		}()
	}
	wg.Wait()
	in := &Input{ControllerConfig: set.ControllerConfig()}
	for i, name := range names {
		if errs[i] != nil {
			if in.Failed == nil {
				in.Failed = map[string]error{}
			}
			in.Failed[name] = errs[i]
			continue
		}
		in.Results = append(in.Results, results[i])
	}
	return in
}
