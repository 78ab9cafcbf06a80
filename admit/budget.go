package admit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Bounds on what a review proves. Ignition's validation, which every
// parse, check and translation runs (a dozen passes a review, the
// readers' own parsers among them), costs some 100 µs of CPU an item
// (file, directory, link, unit, dropin), and it compares every path with
// every link's, and each disk's partitions with each other
// (partitionsOverlap): a config past any bound would outlast the review's
// budget, however it were written. OpenShift's rendered configs hold a
// few hundred items, a few links and no partitions; a GPT holds 128
// partitions unless told otherwise.
const (
	maxItems          = 8192
	maxLinkPairs      = 1 << 22 // links × (files + directories + links)
	maxPartitionPairs = 1 << 16 // Σ over disks of partitions²
)

// shape is what costOf reads of a config: its items, paths alone.
type shape struct {
	Storage struct {
		Files       []pathOnly `json:"files"`
		Directories []pathOnly `json:"directories"`
		Links       []pathOnly `json:"links"`
		Disks       []struct {
			Partitions []struct{} `json:"partitions"`
		} `json:"disks"`
		Filesystems []struct{} `json:"filesystems"`
		Raid        []struct{} `json:"raid"`
		Luks        []struct{} `json:"luks"`
	} `json:"storage"`
	Passwd struct {
		Users  []struct{} `json:"users"`
		Groups []struct{} `json:"groups"`
	} `json:"passwd"`
	Systemd struct {
		Units []struct {
			Dropins []struct{} `json:"dropins"`
		} `json:"units"`
	} `json:"systemd"`
}

type pathOnly struct {
	Path string `json:"path"`
}

// tooCostly says why a config is past the bounds above, nil when it is
// not (or does not decode: the parser says why then). One linear pass,
// before any of Ignition's.
func tooCostly(raw []byte) error {
	var s shape
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	st := s.Storage
	nodes := len(st.Files) + len(st.Directories) + len(st.Links)
	items := nodes
	for _, u := range s.Systemd.Units {
		items += 1 + len(u.Dropins)
	}
	partitionPairs := 0
	for _, d := range st.Disks {
		items += 1 + len(d.Partitions)
		partitionPairs += len(d.Partitions) * len(d.Partitions)
	}
	items += len(st.Filesystems) + len(st.Raid) + len(st.Luks) + len(s.Passwd.Users) + len(s.Passwd.Groups)
	if items > maxItems {
		return fmt.Errorf("too costly to prove within the review's time: %d files, directories, links, units, dropins, disks, partitions, filesystems, RAID and LUKS devices, users and groups, over the %d the webhook proves", items, maxItems)
	}
	if partitionPairs > maxPartitionPairs {
		return fmt.Errorf("too costly to prove within the review's time: disks whose partitions Ignition's validation compares pairwise, %d comparisons, over the %d the webhook allows", partitionPairs, maxPartitionPairs)
	}
	if pairs := len(st.Links) * nodes; pairs > maxLinkPairs {
		return fmt.Errorf("too costly to prove within the review's time: %d links, each compared with %d paths by Ignition's validation, over the %d comparisons the webhook allows", len(st.Links), nodes, maxLinkPairs)
	}
	return nil
}

// stopped is a PassCostly error once ctx has ended (the review's budget
// spent, or its client gone), nil before: the lowering checks it between
// its passes, so no pass starts after the API server has given up.
func stopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	why := "the review's time ran out"
	if cause := context.Cause(ctx); cause != nil && !strings.Contains(cause.Error(), "deadline") {
		why = "the review ended: " + cause.Error()
	}
	return &PassError{Kind: PassCostly, Err: fmt.Errorf("too costly to prove: %s", why)}
}
