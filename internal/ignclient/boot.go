package ignclient

import (
	"context"
	"os"
	"testing"
)

// logTail is how much of a failed run's log a test failure shows: the
// end, where the failing stage speaks.
const logTail = 4000

// Boot runs the client's fetch and files stages against url the way a
// booting node does (see run) for a test: the scratch directory is removed
// when tb's test ends, and a failed run fails tb with the error and the
// end of the log.
func Boot(ctx context.Context, tb testing.TB, c Client, url string, opts Options) *Result {
	tb.Helper()
	res, err := run(ctx, c, url, opts, nil)
	return booted(tb, c, res, err)
}

// Booted is Wait for a test, as Boot.
func (r *Running) Booted(tb testing.TB) *Result {
	tb.Helper()
	res, err := r.Wait()
	return booted(tb, r.c, res, err)
}

func booted(tb testing.TB, c Client, res *Result, err error) *Result {
	tb.Helper()
	if res != nil {
		tb.Cleanup(func() { os.RemoveAll(res.Dir) })
	}
	if err != nil {
		tb.Fatalf("%s: %v\n%s", c, err, res.Tail())
	}
	return res
}

// Tail is the end of r's log, all of it when short; "" for a nil r (a run
// that failed before any stage).
func (r *Result) Tail() string {
	if r == nil {
		return ""
	}
	if len(r.Log) > logTail {
		return r.Log[len(r.Log)-logTail:]
	}
	return r.Log
}
