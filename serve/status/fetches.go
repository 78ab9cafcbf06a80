package status

import (
	"time"

	"github.com/ignition-mcs/mcs/internal/text"
	"github.com/ignition-mcs/mcs/serve/fetchlog"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/source"
)

// AttachFetches links every pool of snap to the record of its rendered
// config, before snap is served, and forgets the pools it no longer has.
func (rec *Recorder) AttachFetches(snap *pipeline.Snapshot) {
	for _, name := range rec.fetches.Forget(func(pool string) bool { return snap.Pool(pool) != nil }) {
		rec.m.firstTime.DeleteLabelValues(name)
	}
	for _, name := range snap.Names() {
		p := snap.Pool(name)
		rf := rec.fetches.Served(name, p.Result().Name, snap.Built)
		if p.Fetches.Load() != rf {
			p.Fetches.Store(rf)
		}
		rec.m.firstTime.WithLabelValues(name).Set(unixSeconds(rf.FirstFetch()))
	}
}

// RecordFetch counts a config body served to a client. It allocates
// nothing once the client's version has been seen for this config.
func (rec *Recorder) RecordFetch(p *pipeline.Pool, label, remoteAddr, userAgent string) {
	rf := p.Fetches.Load()
	if rf == nil {
		return // a snapshot never swapped in (tests)
	}
	now := time.Now()
	if rf.Record(label, now.UnixNano()) {
		rec.firstFetch(p.Name(), rf, remoteAddr, userAgent, now)
	}
}

// firstFetch tells everyone that a rendered config reached its first node,
// so "no node has fetched the new config yet" can be told from "nodes
// fetched it and failed later".
func (rec *Recorder) firstFetch(pool string, rf *fetchlog.Rendered, remoteAddr, userAgent string, now time.Time) {
	after := now.Sub(rf.Since()).Round(time.Second)
	rec.log.Info("rendered config fetched for the first time", "pool", pool, "rendered", rf.Name(),
		"remote", remoteAddr, "client", text.ForLog(userAgent), "servedFor", after)
	rec.m.firsts.WithLabelValues(pool).Inc()
	if snap := rec.served(); snap != nil {
		if p := snap.Pool(pool); p != nil && p.Fetches.Load() == rf {
			rec.m.firstTime.WithLabelValues(pool).Set(unixSeconds(now.UnixNano()))
		}
	}
	rec.tell(source.Notice{Kind: source.NoticeFirstFetch, Pool: pool, Rendered: rf.Name(),
		Message: rf.Name() + " first fetched by the node at " + node(remoteAddr, userAgent) + ", " + after.String() + " after this server began serving it"})
}

func unixSeconds(ns int64) float64 {
	if ns == 0 {
		return 0
	}
	return float64(ns) / 1e9
}
