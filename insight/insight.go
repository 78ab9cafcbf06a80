// Package insight turns what the server's /status knows into the Update Status API's health insights, with the content of the alerts of docs/alerts.md.
package insight

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/source/kube"
)

// window is how long after the last refusal or report a condition stays
// told, as the alerts' one-hour ranges.
const window = time.Hour

// DefaultRunbooks is where the insights' references point without
// --runbook-base: docs/alerts.md where this project's source is kept, the
// default of deploy/components/runbook-base too (each alert's section is
// its anchor there).
const DefaultRunbooks = "https://github.com/ignition-mcs/mcs/blob/main/docs/alerts.md"

// fromStatus is the health insights st calls for at now: a pool's nodes
// refused for boot-image skew, renders failing, nodes waiting for a token
// and first-boot failures reported (MCSPointerConfigCAExpiring is the
// controller's, whose PKI manager knows the pointer configs). One insight
// per condition and pool, named mcs-<condition>-<pool>.
// Each insight's reference is its alert's section of runbooks.
func fromStatus(st status.Status, now time.Time, runbooks string) []kube.HealthInsight {
	var out []kube.HealthInsight
	skewed := map[string]string{} // pool: reason
	for _, c := range st.Conditions {
		for _, b := range c.Recent {
			if c.Type == "BootImageSkew" && now.Sub(b.Time) <= window {
				skewed[b.Pool] = b.Reason
			}
		}
	}
	for _, pool := range slices.Sorted(maps.Keys(skewed)) {
		out = append(out, kube.HealthInsight{Name: "mcs-boot-image-skew-refused-" + pool, Pools: []string{pool}, Level: "Warning", Type: "Cluster Capacity",
			Summary:     "Nodes of pool " + pool + " were refused for boot-image skew (" + skewed[pool] + ").",
			Description: "In the last hour the machine-config server answered nodes of pool " + pool + " with the skew stub instead of their config (" + skewed[pool] + "), so they cannot join; an update or rollback that needs new nodes of this pool fails the same way until their boot image is updated.",
			Reference:   runbooks + "#mcsbootimageskewrefused"})
	}
	if e := st.LastError; e != nil {
		pools := e.Pools
		if len(pools) == 0 {
			for _, p := range st.Pools {
				pools = append(pools, p.Name)
			}
		}
		out = append(out, kube.HealthInsight{Name: "mcs-render-failing", Pools: pools, Level: "Warning", Type: "Update Stalled",
			Summary:     "The machine-config server cannot render its newest MachineConfigs.",
			Description: "The newest render of the MachineConfigs fails since " + e.Since.UTC().Format(time.RFC3339) + "; the failing pools serve their last good render (or nothing, if they never rendered), so new nodes would not get the configs an update writes: " + cut(e.Message),
			Reference:   runbooks + "#mcsrenderfailing"})
	}
	out = append(out, waiting(st, now, runbooks)...)
	return append(out, failures(st, now, runbooks)...)
}

// waiting is one insight per token cause keeping nodes waiting.
func waiting(st status.Status, now time.Time, runbooks string) []kube.HealthInsight {
	pools := map[string][]string{} // cause: pools
	for _, w := range st.Waiting {
		if strings.HasPrefix(string(w.Cause), "token-") && now.Sub(w.Last) <= window {
			if p := w.Pool; p != "" && p != "-" && !slices.Contains(pools[string(w.Cause)], p) {
				pools[string(w.Cause)] = append(pools[string(w.Cause)], p)
			} else if _, ok := pools[string(w.Cause)]; !ok {
				pools[string(w.Cause)] = nil
			}
		}
	}
	var out []kube.HealthInsight
	for _, cause := range slices.Sorted(maps.Keys(pools)) {
		out = append(out, kube.HealthInsight{Name: "mcs-nodes-waiting-for-token-" + cause, Pools: pools[cause], Level: "Warning", Type: "Cluster Capacity",
			Summary:     "Nodes are waiting for a valid token (" + cause + ").",
			Description: "The machine-config server keeps refusing config requests for a token (" + cause + "); Ignition retries them, so the nodes stay in their first boot and never join. /status lists the pools and client addresses.",
			Reference:   runbooks + "#mcsnodeswaitingfortoken"})
	}
	return out
}

// failures is one insight per served pool whose nodes reported a failed
// first boot within the window.
func failures(st status.Status, now time.Time, runbooks string) []kube.HealthInsight {
	stages := map[string][]string{} // pool: stages
	for _, r := range st.NodeFailures.Reports {
		if r.Told && now.Sub(r.Last) <= window && !slices.Contains(stages[r.Pool], r.Stage) {
			stages[r.Pool] = append(stages[r.Pool], r.Stage)
		}
	}
	var out []kube.HealthInsight
	for _, pool := range slices.Sorted(maps.Keys(stages)) {
		s := strings.Join(stages[pool], ", ")
		out = append(out, kube.HealthInsight{Name: "mcs-node-first-boot-failed-" + pool, Pools: []string{pool}, Level: "Warning", Type: "Cluster Capacity",
			Summary:     "Nodes of pool " + pool + " reported a failed first boot (stage " + s + ").",
			Description: "In the last hour nodes of pool " + pool + " told the machine-config server (POST /v1/node-failure) that their first boot failed at stage " + s + ", before they could join; the pool's FirstbootFailed Events and /status say which nodes and why. An update that adds or replaces nodes of this pool would fail the same way.",
			Reference:   runbooks + "#mcsnodefirstbootfailed"})
	}
	return out
}

// cut keeps a description within the API's 4096 characters.
func cut(s string) string {
	if r := []rune(s); len(r) > 2048 {
		return string(r[:2048]) + "…"
	}
	return s
}
