package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// A rotated token (a Secret volume's files change) makes a reload, so the
// next node gets it without a restart.
func TestTokenRotationReloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "token"), []byte("one"), 0o600)
		w := WithFiles(idleSource{}, []string{filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")}, 10*time.Millisecond)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		changed := make(chan struct{}, 1)
		go w.Watch(ctx, changed)
		testkit.Advance(time.Minute) // many polls, on the bubble's clock
		select {
		case <-changed:
			t.Fatal("a change signalled before any")
		default:
		}
		os.WriteFile(filepath.Join(dir, "token"), []byte("two-longer"), 0o600)
		testkit.Advance(time.Second)
		select {
		case <-changed:
		default:
			t.Fatal("the rotated token signalled no change")
		}
	})
}

// idleSource is a source that never changes.
type idleSource struct{}

func (idleSource) Load(context.Context) (*Input, error)         { return &Input{}, nil }
func (idleSource) Watch(ctx context.Context, _ chan<- struct{}) { <-ctx.Done() }
func (idleSource) String() string                               { return "idle" }
