package status

import (
	"bytes"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Unknown pool names from a flood of guesses are bounded apart, logged
// once per client up to the bound, and make no node waiting; every known
// pool's cause keeps its own entry after the flood; all of it expires.
func TestWaitingBounds(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	wn := &WaitingNodes{}
	rec, err := New(Config{Waiting: wn})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		for client := range 3 {
			wn.Note(log, CauseUnknownPool, http.StatusInternalServerError, "scan"+strconv.Itoa(i), "10.0.0."+strconv.Itoa(client)+":4000", "curl/8.5.0", "unknown pool")
		}
	}
	if n, want := strings.Count(logs.String(), "node waiting"), (unknownMax+1)*3; n != want {
		t.Errorf("%d WARN lines, want one per pool and client up to the bound: %d", n, want)
	}
	st := rec.Status()
	if len(st.Waiting) != 0 || len(st.UnknownPools) != unknownMax+1 {
		t.Fatalf("waiting %+v, %d unknown pools; want none waiting, %d names plus %q", st.Waiting, len(st.UnknownPools), unknownMax, unlistedPool)
	}
	for i := range waitingMax {
		wn.Note(log, CausePoolNotRendered, http.StatusInternalServerError, "pool-"+strconv.Itoa(i), "10.0.0.9:1", "Ignition/v2.27.0", "no good render yet")
	}
	st = rec.Status()
	if len(st.Waiting) != waitingMax || slices.ContainsFunc(st.Waiting, func(w Waiting) bool { return w.Pool == unlistedPool }) {
		t.Fatalf("known pools' causes after a flood of unknown names: %d entries, %+v", len(st.Waiting), st.Waiting)
	}
	if c := conditionOf(st, "NodesWaiting"); c.Status != "True" || strings.Contains(c.Message, "scan") {
		t.Errorf("NodesWaiting %+v", c)
	}
	wn.mu.Lock()
	for _, e := range wn.entries {
		e.Last = e.Last.Add(-2 * waitingForget)
	}
	wn.mu.Unlock()
	if st := rec.Status(); len(st.Waiting) != 0 || len(st.UnknownPools) != 0 || conditionOf(st, "NodesWaiting").Status != "False" {
		t.Fatalf("stale causes still shown: %+v %+v", st.Waiting, st.UnknownPools)
	}
}

// conditionOf is st's condition of type typ, or the zero one.
func conditionOf(st Status, typ string) Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return Condition{}
}
