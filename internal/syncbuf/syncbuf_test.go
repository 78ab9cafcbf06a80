package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once: every write lands whole (run with -race).
func TestConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if _, err := b.Write([]byte("ab\n")); err != nil {
					t.Error(err)
				}
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("ab\n", 800) {
		t.Errorf("%d bytes, want %d", len(got), 800*3)
	}
}
