package admit

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"

	"github.com/ignition-mcs/mcs/convert"
)

// defaultCacheBytes bounds what the lowering cache holds: the input and
// output configs of its entries.
const defaultCacheBytes = 32 << 20

// maxValidItems bounds the files and units whose validation reviews share
// (a rendered config holds a few hundred): past it, they are forgotten.
const maxValidItems = 4096

// lowerCache keeps Lower's answers by content: OpenShift's render and
// template controllers re-apply the same bytes on every pool sync, and a
// review of those is then a hash and a lookup instead of Ignition's parse,
// validation and round trip. Results are shared, never changed.
type lowerCache struct {
	mu    sync.Mutex
	max   int
	bytes int
	order *list.List // of *lowerEntry, newest first
	byKey map[lowerKey]*list.Element
	valid convert.ValidItems // shared by the reviews of new content
	// sameAs is storedMatches's answers by the contents of both configs:
	// OpenShift's re-applies compare the same stored config each time.
	sameAs map[[2][sha256.Size]byte]bool
}

// maxSame bounds sameAs; past it, it is forgotten.
const maxSame = 1024

type lowerKey struct {
	sum            [sha256.Size]byte
	ceiling, reads convert.Version
}

type lowerEntry struct {
	key  lowerKey
	res  *Result
	err  error
	size int
}

func newLowerCache(maxBytes int) *lowerCache {
	return &lowerCache{max: maxBytes, order: list.New(), byKey: map[lowerKey]*list.Element{}}
}

// lower is lower(ctx, raw, ceiling, reads), from the cache when the same bytes
// were lowered under the same ceiling and reader before: each content is
// parsed, checked at reads and lowered once.
// One cut short by ctx is not kept.
func (c *lowerCache) lower(ctx context.Context, raw []byte, ceiling, reads convert.Version) (*Result, error) {
	k := lowerKey{sum(raw), ceiling, reads}
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*lowerEntry)
		c.mu.Unlock()
		return e.res, e.err
	}
	c.mu.Unlock()
	res, err := lower(ctx, raw, ceiling, reads, &c.valid)
	c.valid.Forget(maxValidItems)
	if ctx.Err() != nil {
		return res, err
	}
	// An invalid config's error lists every problem Ignition found: it can
	// outweigh the config, so it counts too.
	e := &lowerEntry{key: k, res: res, err: err, size: len(raw) + len(res.Config)}
	if err != nil {
		e.size += len(err.Error())
	}
	if e.size > c.max/4 {
		return res, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return res, err
	}
	c.byKey[k] = c.order.PushFront(e)
	c.bytes += e.size
	for c.bytes > c.max {
		old := c.order.Remove(c.order.Back()).(*lowerEntry)
		delete(c.byKey, old.key)
		c.bytes -= old.size
	}
	return res, err
}

func sum(raw []byte) [sha256.Size]byte { return sha256.Sum256(raw) }

// same is storedMatches(stored, res), kept by the two configs' contents.
func (c *lowerCache) same(stored []byte, res *Result) bool {
	k := [2][sha256.Size]byte{sum(stored), sum(res.Config)}
	c.mu.Lock()
	eq, ok := c.sameAs[k]
	c.mu.Unlock()
	if ok {
		return eq
	}
	eq = storedMatches(stored, res)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sameAs == nil || len(c.sameAs) >= maxSame {
		c.sameAs = map[[2][sha256.Size]byte]bool{}
	}
	c.sameAs[k] = eq
	return eq
}
