package source

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"
)

// WithFiles is src, signalling a change also when one of paths changes
// (size, modification time or presence, following symlinks as a Secret
// volume's files are), checked every every (100 ms at least): files read
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
	stamp := func() string { return stamps(f.paths) }
	poll(ctx, max(f.every, 100*time.Millisecond), stamp(), stamp, changed)
}

// stamps is the size and modification time of each path.
func stamps(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil {
			b.WriteString(strconv.FormatInt(info.Size(), 10) + " " + strconv.FormatInt(info.ModTime().UnixNano(), 10))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
