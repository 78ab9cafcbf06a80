package render

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/ignition-mcs/mcs/convert"
)

// ParseCache remembers parsed Ignition configs across loads of a changing
// tree, so a re-render parses only the MachineConfigs whose config changed
// (parsing validates every data URL, and is most of a load). Entries that a
// load did not use are dropped when it ends, so the cache never outgrows the
// tree. Parsed configs are shared between Sets: rendering never modifies
// them (TestRenderLeavesSetUnchanged).
type ParseCache struct {
	mu     sync.Mutex
	m      map[[32]byte]parsedConfig
	used   map[[32]byte]bool
	shared renderShared
	// decoded are the objects of each stream a load decoded, by its
	// content (see decodedKey): a load given the same bytes again takes
	// them as they were, so it decodes only the objects that changed.
	decoded     map[[32]byte]*decodedData
	decodedUsed map[[32]byte]bool
}

// decodedFor returns the stream's earlier decoding, or nil.
func (c *ParseCache) decodedFor(key [32]byte) *decodedData {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.decoded[key]
	if d != nil {
		if c.decodedUsed == nil {
			c.decodedUsed = map[[32]byte]bool{}
		}
		c.decodedUsed[key] = true
	}
	return d
}

func (c *ParseCache) keepDecoded(key [32]byte, d *decodedData) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decoded == nil {
		c.decoded = map[[32]byte]*decodedData{}
	}
	if c.decodedUsed == nil {
		c.decodedUsed = map[[32]byte]bool{}
	}
	c.decoded[key] = d
	c.decodedUsed[key] = true
}

// entryOf is the entry of d's i-th MachineConfig, built by newEntry the
// first time.
func (c *ParseCache) entryOf(d *decodedData, i int, build func() *entry) *entry {
	c.mu.Lock()
	e := d.entries[i]
	if e != nil && e.parsed != nil {
		// Its parsed config stays in the cache as long as it is read,
		// for any other MachineConfig of the same config.
		c.markUsed(e.parsedKey)
		if _, ok := c.m[e.parsedKey]; !ok {
			if c.m == nil {
				c.m = map[[32]byte]parsedConfig{}
			}
			c.m[e.parsedKey] = *e.parsed
		}
	}
	c.mu.Unlock()
	if e != nil {
		return e
	}
	e = build()
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.entries[i] == nil {
		d.entries[i] = e
	}
	return d.entries[i]
}

// renderShared is what renders share by content, within a set and from one
// load to the next: the YAML of the list items names hash, and the items
// that pass validation alone. An edit changes few items, so most are found
// again; each is forgotten once it holds more than maxShared entries.
type renderShared struct {
	yaml  yamlItems
	valid validItems
}

// maxShared bounds each of renderShared's memos (a realdata pool has a
// few hundred items; a hundred pools share most of theirs).
const maxShared = 8192

func (r *renderShared) trim() {
	r.yaml.trim(maxShared)
	r.valid.trim(maxShared)
}

type parsedConfig struct {
	p   *convert.Parsed
	err error
	// written is the config as written (nil when it does not decode as
	// one), for the checks that read it: decoded once per content too.
	written *writtenConfig
}

func parseConfig(raw []byte) parsedConfig {
	p, err := convert.Parse(raw)
	pc := parsedConfig{p: p, err: err}
	var w writtenConfig
	if json.Unmarshal(raw, &w) == nil {
		pc.written = &w
	}
	return pc
}

func (c *ParseCache) parse(raw []byte) (parsedConfig, [32]byte) {
	if c == nil {
		return parseConfig(raw), [32]byte{}
	}
	key := sha256.Sum256(raw)
	c.mu.Lock()
	hit, ok := c.m[key]
	c.markUsed(key)
	c.mu.Unlock()
	if ok {
		return hit, key
	}
	pc := parseConfig(raw)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[[32]byte]parsedConfig{}
	}
	c.m[key] = pc
	c.mu.Unlock()
	return pc, key
}

// markUsed keeps a parsed config past this load's sweep; c.mu is held.
func (c *ParseCache) markUsed(key [32]byte) {
	if c.used == nil {
		c.used = map[[32]byte]bool{}
	}
	c.used[key] = true
}

// sweep drops what the load that just ended did not use.
func (c *ParseCache) sweep() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if !c.used[k] {
			delete(c.m, k)
		}
	}
	c.used = nil
	for k := range c.decoded {
		if !c.decodedUsed[k] {
			delete(c.decoded, k)
		}
	}
	c.decodedUsed = nil
	c.shared.trim()
}

// size is the number of configs held.
func (c *ParseCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
