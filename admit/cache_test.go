package admit

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

func configOf(i int) []byte {
	return fmt.Appendf(nil, `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/f%d","contents":{"source":"data:,x"}}]}}`, i)
}

func TestLowerCache(t *testing.T) {
	raw := configOf(0)
	want, wantErr := Lower(raw, convert.V3_4)
	c := newLowerCache(1 << 20)

	t.Run("a hit is the first answer", func(t *testing.T) {
		first, err1 := c.lower(context.Background(), raw, convert.V3_4, convert.Version{})
		again, err2 := c.lower(context.Background(), append([]byte(nil), raw...), convert.V3_4, convert.Version{})
		if first != again || err1 != err2 {
			t.Fatalf("the same bytes were lowered twice: %p %p", first, again)
		}
		if !reflect.DeepEqual(first, want) || err1 != wantErr {
			t.Errorf("cached %+v (%v), Lower %+v (%v)", first, err1, want, wantErr)
		}
	})
	t.Run("the ceiling is part of the key", func(t *testing.T) {
		a, _ := c.lower(context.Background(), raw, convert.V3_4, convert.Version{})
		b, _ := c.lower(context.Background(), raw, convert.Version{}, convert.Version{})
		if a == b {
			t.Error("a different ceiling got the other ceiling's answer")
		}
	})
	t.Run("the reader's spec is part of the key", func(t *testing.T) {
		// Valid at 3.2.0, not at 3.3.0 and later: stored as written where
		// the operator reads 3.5.0, lowered where it reads 3.2.0 (4.13).
		link := []byte(`{"ignition":{"version":"3.2.0"},"storage":{"links":[{"path":"/etc/x"}]}}`)
		_, err35 := c.lower(context.Background(), link, convert.V3_4, convert.V3_5)
		res32, err32 := c.lower(context.Background(), link, convert.V3_4, convert.V3_2)
		if err35 == nil || err32 != nil || res32.Stored != convert.V3_0 {
			t.Errorf("reads 3.5.0: %v; reads 3.2.0: stored %s, %v", err35, res32.Stored, err32)
		}
		if _, again := c.lower(context.Background(), bytes.Clone(link), convert.V3_4, convert.V3_5); again != err35 {
			t.Error("the same bytes were checked twice")
		}
	})
	t.Run("other bytes, other answer", func(t *testing.T) {
		a, _ := c.lower(context.Background(), raw, convert.V3_4, convert.Version{})
		b, _ := c.lower(context.Background(), configOf(1), convert.V3_4, convert.Version{})
		if a == b || reflect.DeepEqual(a.Config, b.Config) {
			t.Error("different configs share an answer")
		}
	})
	t.Run("bounded", func(t *testing.T) {
		small := newLowerCache(4 * (len(raw) + len(want.Config)))
		for i := range 50 {
			small.lower(context.Background(), configOf(i), convert.V3_4, convert.Version{})
			if small.bytes > small.max || small.order.Len() != len(small.byKey) {
				t.Fatalf("after %d: %d bytes of %d, %d entries, %d keys", i, small.bytes, small.max, small.order.Len(), len(small.byKey))
			}
		}
		if _, ok := small.byKey[lowerKey{sum(configOf(0)), convert.V3_4, convert.Version{}}]; ok {
			t.Error("the oldest entry was never evicted")
		}
	})
	t.Run("too large for it: not kept", func(t *testing.T) {
		tiny := newLowerCache(len(raw))
		tiny.lower(context.Background(), raw, convert.V3_4, convert.Version{})
		if tiny.order.Len() != 0 || tiny.bytes != 0 {
			t.Errorf("kept an entry over a quarter of its size: %d bytes", tiny.bytes)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		cc := newLowerCache(1 << 20)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for j := range 20 {
					res, _ := cc.lower(context.Background(), configOf(j%5), convert.V3_4, convert.Version{})
					if res.Stored != convert.V3_0 {
						t.Errorf("goroutine %d: stored at %s", i, res.Stored)
					}
				}
			})
		}
		wg.Wait()
		if cc.order.Len() != 5 {
			t.Errorf("%d entries for 5 configs", cc.order.Len())
		}
	})
}

// An invalid config's error, which lists every problem, counts against the
// cache's bound: else the bound would hold several times its bytes.
func TestLowerCacheCountsErrors(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"ignition":{"version":"3.5.0"},"storage":{"files":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"relative/%d"}`, i) // each one a problem
	}
	b.WriteString(`]}}`)
	c := newLowerCache(1 << 20)
	_, err := c.lower(context.Background(), b.Bytes(), convert.Version{}, convert.Version{})
	if err == nil {
		t.Fatal("200 relative paths lowered without an error")
	}
	if min := b.Len() + len(err.Error()); c.bytes < min {
		t.Errorf("the cache counts %d bytes for a %d-byte config whose error has %d: want at least %d", c.bytes, b.Len(), len(err.Error()), min)
	}
}
