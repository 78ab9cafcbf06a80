package insight

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/nodefail"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/skewgate"
	"github.com/ignition-mcs/mcs/source/kube"
)

// Each condition of the alerts becomes an insight per pool, within the
// alerts' hour; a quiet status none.
func TestFromStatus(t *testing.T) {
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	if got := fromStatus(status.Status{}, now, DefaultRunbooks); len(got) != 0 {
		t.Fatalf("a quiet status: %+v", got)
	}
	st := status.Status{
		Pools: []status.PoolStatus{{Name: "master"}, {Name: "worker"}},
		Conditions: []status.Condition{{Type: "BootImageSkew", Recent: []skewgate.Blocked{
			{Time: now.Add(-10 * time.Minute), Pool: "worker", Reason: "spec-unreadable"},
			{Time: now.Add(-2 * time.Hour), Pool: "infra", Reason: "spec-unreadable"},
		}}},
		Waiting: []status.Waiting{{Cause: status.CauseTokenMissing, Pool: "worker", Last: now.Add(-time.Minute)}, {Cause: status.CauseOverloaded, Last: now}},
		NodeFailures: nodefail.Status{Reports: []nodefail.Entry{
			{Pool: "worker", Node: "n1", Stage: "firstboot-update", Told: true, Last: now.Add(-5 * time.Minute)},
			{Pool: "guess", Node: "n2", Stage: "x", Told: false, Last: now},
		}},
	}
	got := fromStatus(st, now, DefaultRunbooks)
	var names []string
	for _, hi := range got {
		names = append(names, hi.Name)
		if hi.Level != "Warning" || hi.Summary == "" || !strings.HasPrefix(hi.Reference, "https://github.com/ignition-mcs/mcs/blob/main/docs/alerts.md#") {
			t.Errorf("%+v", hi)
		}
	}
	want := []string{"mcs-boot-image-skew-refused-worker", "mcs-nodes-waiting-for-token-token-missing", "mcs-node-first-boot-failed-worker"}
	if !slices.Equal(names, want) {
		t.Errorf("insights %q, want %q", names, want)
	}
	st.LastError = &status.RenderError{Message: "error at $.spec.config: bad", Since: now.Add(-time.Hour)}
	got = fromStatus(st, now, DefaultRunbooks)
	i := slices.IndexFunc(got, func(hi kube.HealthInsight) bool { return hi.Name == "mcs-render-failing" })
	if i < 0 || !slices.Equal(got[i].Pools, []string{"master", "worker"}) || got[i].Type != "Update Stalled" || !strings.Contains(got[i].Description, "$.spec.config") {
		t.Errorf("render failing: %+v", got)
	}
}
