package stored

import (
	"sync"

	"github.com/ignition-mcs/mcs/convert"
)

// Ceiling is the webhook's ceiling as a Watch counts against it: unknown
// until Set, and a change counted again at once. Give its Get as
// Config.Ceiling, and the Watch to Follow.
type Ceiling struct {
	mu    sync.Mutex
	spec  convert.Version
	known bool
	watch *Watch
}

// Get is the ceiling in force, and whether there is one yet.
func (c *Ceiling) Get() (convert.Version, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spec, c.known
}

// Follow makes w count again whenever Set changes the ceiling.
func (c *Ceiling) Follow(w *Watch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch = w
}

// Set is the ceiling in force; the watch followed counts again at once
// when it changed.
func (c *Ceiling) Set(v convert.Version) {
	c.mu.Lock()
	changed := !c.known || c.spec != v
	c.spec, c.known = v, true
	w := c.watch
	c.mu.Unlock()
	if changed && w != nil {
		w.refresh()
	}
}
