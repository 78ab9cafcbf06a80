package serve

import (
	"log/slog"
	"net/http"

	"github.com/ignition-mcs/mcs/serve/status"
)

// contractRow is one row of the contract.
type contractRow struct {
	Cause status.Cause
	Code  int
	// Fix says what ends the cause; it ends the WARN line and the /status entry.
	Fix string
}

// Retried reports whether Ignition retries the answer (it retries 5xx).
func (a contractRow) Retried() bool { return a.Code >= 500 }

// contract lists every answer that is not a config, in the order of
// docs/reliability.md.
var contract = []contractRow{
	{status.CauseNotReady, http.StatusServiceUnavailable, "wait: the first render is running"},
	// Nothing rendered yet and the newest attempt failed: the admin fixes
	// the source, which is watched, and the node boots on its next retry.
	{status.CauseRenderFailed, http.StatusServiceUnavailable, "fix what lastError in /status names: the source is rendered again when it changes"},
	{status.CauseOverloaded, http.StatusServiceUnavailable, "wait, or raise --max-in-flight"},
	{status.CauseUnknownPool, http.StatusInternalServerError, "create the pool, or correct the pool name in the node's pointer config"},
	{status.CausePoolNotRendered, http.StatusInternalServerError, "fix the pool's MachineConfigs (see the pool's error in /status)"},
	// 511, as HyperShift's ignition server answers an unknown token: the
	// only thing Ignition logs of a retried answer is its status text.
	{status.CauseTokenMissing, http.StatusNetworkAuthenticationRequired, "add the token to the node's pointer config (spec 3.1+: httpHeaders), or turn --auth-token-file off"},
	{status.CauseTokenRejected, http.StatusNetworkAuthenticationRequired, "add the node's token to --auth-token-file"},
	{status.CauseTokenRetired, http.StatusNetworkAuthenticationRequired, "the node's token was rotated out of --auth-token-file: add it back until the node has joined"},
	// A valid token of another pool: a misplaced pointer config, or a node
	// reaching for a config that is not its own. Retried like any token the
	// admin can still fix, never served.
	{status.CauseTokenOtherPool, http.StatusNetworkAuthenticationRequired, "give the node its own pool's token, or add the pool to the token's line in --auth-token-file"},
	{status.CauseStubFailed, http.StatusInternalServerError, "a bug: report it; the skew stub could not be built"},
	// Client-side errors no admin action on the server can fix: no Ignition
	// release sends them, so a 4xx only ever stops a script or a human.
	{status.CauseNoWrittenSpec, http.StatusNotAcceptable, "send an Accept header naming a spec mcs writes"},
	{status.CauseBadVersion, http.StatusBadRequest, "use ?version= with a spec mcs writes"},
	{status.CauseBadFormat, http.StatusBadRequest, "leave ?format= out, or give json"},
	{status.CauseBadQuery, http.StatusBadRequest, "use only ?version=, ?format=json and ?pretty=1"},
	{status.CauseNotExpressible, http.StatusNotAcceptable, "without a skew gate only: ask for a newer spec"},
}

var answers = func() map[status.Cause]contractRow {
	m := make(map[status.Cause]contractRow, len(contract))
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
	waiting  *status.WaitingNodes
}

// refuse writes the contract's answer for cause with a one-line text body
// (curl users read it; Ignition logs only the status text of a retried
// answer). A retried cause is a node waiting: it is logged at WARN once per
// cause, pool and client, and shows in /status until it stops.
func (ref *refuser) refuse(w http.ResponseWriter, r *http.Request, cause status.Cause, pool, msg string) {
	ref.refuseAs(w, r, cause, pool, msg, cause, msg)
}

// refuseAs is refuse, the client told (body and fix) as for cause told
// with toldMsg, the logs, metrics and /status saying cause and msg: what
// they say may be of use to someone guessing (that a token was once
// valid), and is the admin's to read.
func (ref *refuser) refuseAs(w http.ResponseWriter, r *http.Request, cause status.Cause, pool, msg string, told status.Cause, toldMsg string) {
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
		ref.waiting.Note(ref.log, cause, a.Code, pool, r.RemoteAddr, r.Header.Get("User-Agent"), msg)
	}
	plain(w, a.Code, toldMsg)
}
