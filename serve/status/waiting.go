package status

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/ignition-mcs/mcs/internal/text"
	"github.com/ignition-mcs/mcs/serve/pipeline"
)

// Cause is why /config/ answered something other than a config. Its string
// is the cause label of mcs_config_refusals_total and the key in /status.
type Cause string

// The contract: every answer of /config/ that is not the config. Ignition
// (every release, v0.x included) retries 5xx answers and transport errors
// forever and treats every 4xx as fatal: the boot stops for good. So a
// cause an admin can still fix is a 5xx, and the node waits for the fix.
// docs/reliability.md shows this table; TestContract holds every row.
const (
	CauseNotReady        Cause = "not-ready"
	CauseRenderFailed    Cause = "render-failed"
	CauseOverloaded      Cause = "overloaded"
	CauseUnknownPool     Cause = "unknown-pool"
	CausePoolNotRendered Cause = "pool-not-rendered"
	CauseTokenMissing    Cause = "token-missing"
	CauseTokenRejected   Cause = "token-rejected"
	CauseTokenRetired    Cause = "token-retired"
	CauseTokenOtherPool  Cause = "token-other-pool"
	CauseStubFailed      Cause = "stub-failed"
	CauseNoWrittenSpec   Cause = "no-written-spec"
	CauseBadVersion      Cause = "bad-version"
	CauseBadFormat       Cause = "bad-format"
	CauseBadQuery        Cause = "bad-query"
	CauseNotExpressible  Cause = "not-expressible"
)

// Unauthenticated reports whether the cause refuses a request that
// carried no accepted token.
func (c Cause) Unauthenticated() bool {
	return c == CauseTokenMissing || c == CauseTokenRejected || c == CauseTokenRetired
}

// Waiting is one cause that is keeping nodes waiting, for /status.
type Waiting struct {
	Cause     Cause     `json:"cause"`
	Code      int       `json:"code"`
	Pool      string    `json:"pool,omitempty"`
	Message   string    `json:"message"`
	Requests  int64     `json:"requests"`
	Clients   int       `json:"clients"`
	LastAgent string    `json:"lastClient,omitempty"`
	First     time.Time `json:"firstSeen"`
	Last      time.Time `json:"lastSeen"`
}

// Bounds of the waiting registry: request-supplied pool names and client
// addresses must not grow it without limit.
const (
	waitingMax     = 64   // (cause, pool) entries in /status, unknown pools aside
	unknownMax     = 8    // unknown pool names in /status, besides (other)
	warnedMax      = 4096 // (cause, pool, client) triples logged once
	waitingForget  = 10 * time.Minute
	unlistedPool   = "(other)"
	warnedOverflow = "waiting-node log dedup table full; cleared: some waiting nodes are logged again"
)

type waitKey struct {
	cause Cause
	pool  string
}

type warnKey struct {
	waitKey
	client string
}

// WaitingNodes remembers retried answers: one WARN per cause, pool and
// client, and per (cause, pool) counts for /status. Entries not seen for
// waitingForget leave /status.
type WaitingNodes struct {
	mu      sync.Mutex
	entries map[waitKey]*Waiting
	warned  map[warnKey]struct{}
}

// Note records a retried answer of code to the client at remoteAddr:
// logged once per cause, pool and client, and listed in /status, except
// for requests without an accepted token: anyone can send those, and a
// guesser must not fill a pool's waiting nodes (they are logged and
// counted only).
func (wn *WaitingNodes) Note(log *slog.Logger, cause Cause, code int, pool, remoteAddr, agent, msg string) {
	pool, client := text.Bounded(pool), text.Bounded(hostOf(remoteAddr))
	now := time.Now()
	wn.mu.Lock()
	if wn.entries == nil {
		wn.entries, wn.warned = map[waitKey]*Waiting{}, map[warnKey]struct{}{}
	}
	wk := waitKey{cause, pool}
	var e *Waiting
	if !cause.Unauthenticated() {
		e, wk = wn.entry(now, wk, code)
		e.Requests++
		e.Last, e.Message, e.LastAgent = now, msg, text.Bounded(agent)
	}
	key := warnKey{wk, client}
	_, seen := wn.warned[key]
	if !seen {
		if e != nil {
			e.Clients++
		}
		if len(wn.warned) >= warnedMax {
			clear(wn.warned)
			log.Warn(warnedOverflow)
		}
		wn.warned[key] = struct{}{}
	}
	wn.mu.Unlock()
	if !seen {
		log.Warn("node waiting: answered "+fmt.Sprint(code)+", Ignition retries", "cause", string(cause),
			"pool", pool, "remote", client, "client", text.Bounded(agent), "answer", msg, "listed", e != nil)
	}
}

// entry is the /status entry of wk (answered code), made when new, and the key it is
// under (unlisted pools share one). Called with mu held.
func (wn *WaitingNodes) entry(now time.Time, wk waitKey, code int) (*Waiting, waitKey) {
	if e := wn.entries[wk]; e != nil {
		return e, wk
	}
	wn.forget(now)
	// Unknown pool names come from the request: capped apart, so junk
	// names cannot crowd a real pool's cause out of /status.
	unknown := wn.count(CauseUnknownPool)
	if wk.cause == CauseUnknownPool && unknown >= unknownMax || wk.cause != CauseUnknownPool && len(wn.entries)-unknown >= waitingMax {
		wk.pool = unlistedPool
	}
	e := wn.entries[wk]
	if e == nil {
		e = &Waiting{Cause: wk.cause, Code: code, Pool: wk.pool, First: now}
		wn.entries[wk] = e
	}
	return e, wk
}

// count is the number of entries for cause. Called with mu held.
func (wn *WaitingNodes) count(cause Cause) int {
	n := 0
	for k := range wn.entries {
		if k.cause == cause {
			n++
		}
	}
	return n
}

// forget drops entries not seen lately. Called with mu held.
func (wn *WaitingNodes) forget(now time.Time) {
	for k, e := range wn.entries {
		if now.Sub(e.Last) > waitingForget {
			wn.drop(k)
		}
	}
}

// drop removes an entry and its log dedup keys, so a cause that comes
// back is logged again. Called with mu held.
func (wn *WaitingNodes) drop(k waitKey) {
	delete(wn.entries, k)
	for wk := range wn.warned {
		if wk.waitKey == k {
			delete(wn.warned, wk)
		}
	}
}

// resolved drops the causes snap, just swapped in, answers: nothing served
// once anything is, an unknown pool once snap has it, a pool without a
// good render once snap serves it. A fixed cause leaves /status and
// NodesWaiting at once, not ten minutes later still saying nodes retry.
func (wn *WaitingNodes) resolved(snap *pipeline.Snapshot) {
	wn.mu.Lock()
	defer wn.mu.Unlock()
	for k := range wn.entries {
		_, failing := snap.Failed(k.pool)
		switch {
		case k.cause == CauseNotReady || k.cause == CauseRenderFailed,
			k.cause == CauseUnknownPool && (snap.Pool(k.pool) != nil || failing),
			k.cause == CausePoolNotRendered && snap.Pool(k.pool) != nil:
			wn.drop(k)
		}
	}
}

// list returns the causes seen within waitingForget, most recent first:
// with unknown set, the requests for pools the server does not know, else
// every other cause. Anyone can ask for /config/scan1: those are listed
// apart, and make no node "waiting" on the server's side.
func (wn *WaitingNodes) list(unknown bool) []Waiting {
	now := time.Now()
	wn.mu.Lock()
	defer wn.mu.Unlock()
	out := []Waiting{}
	for k, e := range wn.entries {
		if now.Sub(e.Last) <= waitingForget && (k.cause == CauseUnknownPool) == unknown {
			out = append(out, *e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Last.After(out[j].Last) })
	return out
}
