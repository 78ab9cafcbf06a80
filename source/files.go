package source

import (
	"context"
	"time"

	"github.com/ignition-mcs/mcs/source/tree"
)

// WithFiles is src, signalling a change also when one of paths changes
// (its bytes or presence, following symlinks as a Secret volume's files
// are; see tree.Memo.Digest), checked every every (100 ms at least): files read
// beside src's objects, such as the node-bootstrapper token mcs start puts
// into the served kubeconfig, reach the next render without a restart.
func WithFiles(src Source, paths []string, every time.Duration) Source {
	return &filesWatched{Source: src, paths: paths, every: every}
}

type filesWatched struct {
	Source
	paths []string
	every time.Duration
}

func (f *filesWatched) Watch(ctx context.Context, changed chan<- struct{}) {
	go f.Source.Watch(ctx, changed)
	var memo tree.Memo
	stamp := func() [32]byte { return memo.Digest(tree.Limits{}, f.paths...) }
	poll(ctx, max(f.every, 100*time.Millisecond), stamp(), stamp, changed)
}
