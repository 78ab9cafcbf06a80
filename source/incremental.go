package source

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/ignition-mcs/mcs/convert"
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

// Render renders set's pools with opts, as renderPools does, reusing the
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

// Carry replaces each result of in that equals the one the previous call
// (of Carry or Render) gave for its pool by that earlier *Result, so the
// server carries its responses over: for sources that make results without
// rendering (the Kubernetes source's pool mode, which re-reads the rendered
// MachineConfig a pool names on every load).
func (r *Renderer) Carry(in *Input) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := make(map[string]renderedPool, len(in.Results))
	for i, res := range in.Results {
		fp := resultFingerprint(res)
		if prev, ok := r.last[res.Pool]; ok && prev.fp == fp && prev.res != nil {
			in.Results[i] = prev.res
		}
		next[res.Pool] = renderedPool{fp: fp, res: in.Results[i]}
	}
	r.last = next
}

// resultFingerprint hashes everything a result holds that is served or
// shown: results with the same fingerprint serve the same bytes.
func resultFingerprint(res *render.Result) render.Fingerprint {
	warnings := make([]string, len(res.Warnings))
	for i, w := range res.Warnings {
		warnings[i] = w.Error()
	}
	b, err := json.Marshal(struct {
		Pool, Name     string
		MachineConfig  *render.MachineConfig
		Spec, MinSpec  string
		Options        render.Options
		Reasons        []render.Reason
		MachineConfigs []string
		Warnings       []string
		Provenance     render.Provenance
		Overrides      []render.Override
		Config         *convert.Config
		WrittenModes   convert.WrittenModes
		Image          string
	}{res.Pool, res.Name, res.MachineConfig, res.Spec.String(), res.MinSpec.String(), res.Options, res.Reasons,
		res.MachineConfigs, warnings, res.Provenance, res.Overrides, &res.Config, res.WrittenModes, res.Image})
	if err != nil {
		return render.Fingerprint{} // never equal to a real one's hash
	}
	return sha256.Sum256(b)
}
