package source

import (
	"github.com/ignition-mcs/mcs/render"
)

// renderPools renders every pool of set in parallel, one by one, so a
// failure is the failing pool's alone: it keeps serving its last good render
// while the others update, as upstream degrades only that pool.
func renderPools(set *render.Set, opts render.Options) *Input {
	return new(Renderer).Render(set, opts)
}
