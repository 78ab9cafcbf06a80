package serve

import (
	"fmt"
	"log/slog"
	"net/http"
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

// contractRow is one row of the contract.
type contractRow struct {
	Cause Cause
	Code  int
	// Fix says what ends the cause; it ends the WARN line and the /status entry.
	Fix string
}

// Retried reports whether Ignition retries the answer (it retries 5xx).
func (a contractRow) Retried() bool { return a.Code >= 500 }

// contract lists every answer that is not a config, in the order of
// docs/reliability.md.
var contract = []contractRow{
	{CauseNotReady, http.StatusServiceUnavailable, "wait: the first render is running"},
	// Nothing rendered yet and the newest attempt failed: the admin fixes
	// the source, which is watched, and the node boots on its next retry.
	{CauseRenderFailed, http.StatusServiceUnavailable, "fix what lastError in /status names: the source is rendered again when it changes"},
	{CauseOverloaded, http.StatusServiceUnavailable, "wait, or raise --max-in-flight"},
	{CauseUnknownPool, http.StatusInternalServerError, "create the pool, or correct the pool name in the node's pointer config"},
	{CausePoolNotRendered, http.StatusInternalServerError, "fix the pool's MachineConfigs (see the pool's error in /status)"},
	// 511, as HyperShift's ignition server answers an unknown token: the
	// only thing Ignition logs of a retried answer is its status text.
	{CauseTokenMissing, http.StatusNetworkAuthenticationRequired, "add the token to the node's pointer config (spec 3.1+: httpHeaders), or turn --auth-token-file off"},
	{CauseTokenRejected, http.StatusNetworkAuthenticationRequired, "add the node's token to --auth-token-file"},
	{CauseTokenRetired, http.StatusNetworkAuthenticationRequired, "the node's token was rotated out of --auth-token-file: add it back until the node has joined"},
	// A valid token of another pool: a misplaced pointer config, or a node
	// reaching for a config that is not its own. Retried like any token the
	// admin can still fix, never served.
	{CauseTokenOtherPool, http.StatusNetworkAuthenticationRequired, "give the node its own pool's token, or add the pool to the token's line in --auth-token-file"},
	{CauseStubFailed, http.StatusInternalServerError, "a bug: report it; the skew stub could not be built"},
	// Client-side errors no admin action on the server can fix: no Ignition
	// release sends them, so a 4xx only ever stops a script or a human.
	{CauseNoWrittenSpec, http.StatusNotAcceptable, "send an Accept header naming a spec mcs writes"},
	{CauseBadVersion, http.StatusBadRequest, "use ?version= with a spec mcs writes"},
	{CauseBadFormat, http.StatusBadRequest, "leave ?format= out, or give json"},
	{CauseBadQuery, http.StatusBadRequest, "use only ?version=, ?format=json and ?pretty=1"},
	{CauseNotExpressible, http.StatusNotAcceptable, "without a skew gate only: ask for a newer spec"},
}

var answers = func() map[Cause]contractRow {
	m := make(map[Cause]contractRow, len(contract))
	for _, a := range contract {
		m[a.Cause] = a
	}
	return m
}()

// refuser writes the contract's answers, counting each cause and noting
// the nodes a retried cause keeps waiting.
type refuser struct {
	log      *slog.Logger
	counters *counters
	waiting  *waitingNodes
}

// refuse writes the contract's answer for cause with a one-line text body
// (curl users read it; Ignition logs only the status text of a retried
// answer). A retried cause is a node waiting: it is logged at WARN once per
// cause, pool and client, and shows in /status until it stops.
func (ref *refuser) refuse(w http.ResponseWriter, r *http.Request, cause Cause, pool, msg string) {
	ref.refuseAs(w, r, cause, pool, msg, cause, msg)
}

// refuseAs is refuse, the client told (body and fix) as for cause told
// with toldMsg, the logs, metrics and /status saying cause and msg: what
// they say may be of use to someone guessing (that a token was once
// valid), and is the admin's to read.
func (ref *refuser) refuseAs(w http.ResponseWriter, r *http.Request, cause Cause, pool, msg string, told Cause, toldMsg string) {
	a, t := answers[cause], answers[told]
	infoOf(r).cause = cause
	ref.counters.refusal(cause).Inc()
	if a.Code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if a.Code == http.StatusNetworkAuthenticationRequired {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcs"`)
	}
	if a.Retried() {
		msg += " (" + a.Fix + "; the node retries)"
		toldMsg += " (" + t.Fix + "; the node retries)"
		ref.waiting.note(ref.log, cause, bounded(pool), bounded(hostOf(r.RemoteAddr)), r.Header.Get("User-Agent"), msg)
	}
	plain(w, a.Code, toldMsg)
}

// unauthenticated reports whether cause refuses a request that carried no
// accepted token.
func unauthenticated(cause Cause) bool {
	return cause == CauseTokenMissing || cause == CauseTokenRejected || cause == CauseTokenRetired
}

// bounded keeps a request-supplied string short enough for a log and /status.
func bounded(s string) string { return text.Truncate(s, 64, "…") }

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

// waitingNodes remembers retried answers: one WARN per cause, pool and
// client, and per (cause, pool) counts for /status. Entries not seen for
// waitingForget leave /status.
type waitingNodes struct {
	mu      sync.Mutex
	entries map[waitKey]*Waiting
	warned  map[warnKey]struct{}
}

// note records a retried answer: logged once per cause, pool and client,
// and listed in /status, except for requests without an accepted token:
// anyone can send those, and a guesser must not fill a pool's waiting
// nodes (they are logged and counted only).
func (wn *waitingNodes) note(log *slog.Logger, cause Cause, pool, client, agent, msg string) {
	now := time.Now()
	wn.mu.Lock()
	if wn.entries == nil {
		wn.entries, wn.warned = map[waitKey]*Waiting{}, map[warnKey]struct{}{}
	}
	wk := waitKey{cause, pool}
	var e *Waiting
	if !unauthenticated(cause) {
		e, wk = wn.entry(now, wk)
		e.Requests++
		e.Last, e.Message, e.LastAgent = now, msg, bounded(agent)
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
		log.Warn("node waiting: answered "+fmt.Sprint(answers[cause].Code)+", Ignition retries", "cause", string(cause),
			"pool", pool, "remote", client, "client", bounded(agent), "answer", msg, "listed", e != nil)
	}
}

// entry is the /status entry of wk, made when new, and the key it is
// under (unlisted pools share one). Called with mu held.
func (wn *waitingNodes) entry(now time.Time, wk waitKey) (*Waiting, waitKey) {
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
		e = &Waiting{Cause: wk.cause, Code: answers[wk.cause].Code, Pool: wk.pool, First: now}
		wn.entries[wk] = e
	}
	return e, wk
}

// count is the number of entries for cause. Called with mu held.
func (wn *waitingNodes) count(cause Cause) int {
	n := 0
	for k := range wn.entries {
		if k.cause == cause {
			n++
		}
	}
	return n
}

// forget drops entries not seen lately. Called with mu held.
func (wn *waitingNodes) forget(now time.Time) {
	for k, e := range wn.entries {
		if now.Sub(e.Last) > waitingForget {
			wn.drop(k)
		}
	}
}

// drop removes an entry and its log dedup keys, so a cause that comes
// back is logged again. Called with mu held.
func (wn *waitingNodes) drop(k waitKey) {
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
func (wn *waitingNodes) resolved(snap *pipeline.Snapshot) {
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
func (wn *waitingNodes) list(unknown bool) []Waiting {
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
