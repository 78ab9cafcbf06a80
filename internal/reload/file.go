// Package reload keeps what a server reads from files current while it runs: a parsed file re-read by content, and a TLS certificate pair on controller-runtime's certwatcher, each keeping its last good value when the new one does not load.
package reload

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/ignition-mcs/mcs/internal/regularfile"
)

// File is a file's parsed value, read again at most every Every and parsed
// again only when its content changed; when the new content does not
// parse, or the file cannot be read, the last good value stays.
type File[T any] struct {
	Path  string
	Parse func([]byte) (T, error)
	// Every bounds how often a hot path reads the file (default 1s).
	Every time.Duration
	// Clock is what Every is measured on (default the wall clock).
	Clock clock.PassiveClock
	// Max bounds the bytes read (default 1 MiB): past it, the file does
	// not load.
	Max int64
	// Perm, when set, is given the file's permission bits at each read;
	// its error keeps the file from loading (a secret anyone may read).
	Perm func(fs.FileMode) error

	mu      sync.Mutex
	checked time.Time
	content []byte
	val     T
	loaded  bool
	err     error // of the newest attempt
}

// Get returns the newest value that parsed and, until the file parses
// again, the error of the newest attempt: between reads too, so a caller
// does not take a kept value for a recovery. Before any value parsed, ok
// is false.
func (f *File[T]) Get() (v T, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	every := f.Every
	if every <= 0 {
		every = time.Second
	}
	if f.loaded && c.Since(f.checked) < every {
		return f.val, true, f.err
	}
	f.checked = c.Now()
	f.err = f.load()
	return f.val, f.loaded, f.err
}

// load reads the file and parses it if its content changed; under f.mu.
func (f *File[T]) load() error {
	if _, err := os.Stat(f.Path); err != nil {
		return err // as a stat says it: the file is not there
	}
	max := f.Max
	if max <= 0 {
		max = 1 << 20
	}
	// Never opened unless regular: a FIFO would hang every caller of Get.
	b, info, err := regularfile.ReadFile(f.Path, max)
	if err != nil {
		return err
	}
	if f.Perm != nil {
		if err := f.Perm(info.Mode().Perm()); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if f.loaded && bytes.Equal(b, f.content) {
		return nil
	}
	v, err := f.Parse(b)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	f.content, f.val, f.loaded = b, v, true
	return nil
}
