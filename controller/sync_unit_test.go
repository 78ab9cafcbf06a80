package controller

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/render"
)

// A render begun on a change holds its writes until the quiet time: with
// no change meanwhile they are queued, with targets; one more change drops
// them, queues nothing and keeps the targets the last render left.
func TestRenderPassHold(t *testing.T) {
	res := func(pool, key string) target {
		r := &render.Result{Pool: pool}
		copy(r.Key[:], key)
		return target{res: r}
	}
	queued := func(q queue) []string {
		var got []string
		for q.Len() > 0 {
			p, _ := q.Get()
			q.Done(p)
			got = append(got, p)
		}
		slices.Sort(got)
		return got
	}
	for _, tc := range []struct {
		name       string
		change     bool // a change between the render's start and the release
		wantQueued []string
		wantKey    string // pool a's target after the release
	}{
		{"quiet", false, []string{"a", "b"}, "new"},
		{"superseded", true, nil, "old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p plans
			p.targets = map[string]target{"a": res("a", "old")}
			q := newQueue()
			defer q.ShutDown()
			gen, _ := p.changes.get()
			pass := &renderPass{q: q, sent: map[string]string{}, gen: gen, held: map[string]target{"a": res("a", "new"), "b": res("b", "new")}}
			p.begin(pass)
			if q.Len() != 0 {
				t.Fatal("held renders were queued")
			}
			if tc.change {
				ctx, cancel := context.WithCancel(context.Background())
				in, out := make(chan struct{}, 1), make(chan struct{}, 1)
				go p.changes.relay(ctx, out, in, nil)
				in <- struct{}{}
				<-out
				cancel()
			}
			p.release(pass)
			p.release(pass) // the render's end releases again: nothing more
			if got := queued(q); !slices.Equal(got, tc.wantQueued) {
				t.Errorf("queued %v, want %v", got, tc.wantQueued)
			}
			if got := p.targets["a"].key()[:len(tc.wantKey)]; got != tc.wantKey {
				t.Errorf("pool a's target %q, want %q", got, tc.wantKey)
			}
			if pass.dropped != tc.change {
				t.Errorf("dropped %v", pass.dropped)
			}
		})
	}
}

// A sync of a deleted pool that was queued before the delete ends well
// after forgetPools dropped the pool: /status must not list it again (it
// did, until the next render, found by an audit of TestFollowsChanges).
func TestReportBooksNoDeletedPool(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	b := newStatusBook(Config{}, m, slog.New(slog.DiscardHandler))
	b.setRendered(&render.Result{Pool: "infra"})
	b.report("infra", errors.New("conflict"))
	if b.doc.Pools["infra"] == nil || b.doc.Pools["infra"].LastError != "conflict" {
		t.Fatalf("the error not booked: %+v", b.doc.Pools["infra"])
	}
	b.forgetPools(map[string]string{"worker": ""})
	b.report("infra", nil)
	if _, ok := b.doc.Pools["infra"]; ok {
		t.Error("a deleted pool booked again by a sync that ended well")
	}
	b.report("gone", errors.New("conflict"))
	if b.doc.Pools["gone"] == nil {
		t.Error("a sync error not booked")
	}
}
