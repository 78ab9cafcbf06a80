package status

import (
	"fmt"
	"time"

	"github.com/ignition-mcs/mcs/source"
)

// SourceBacklog is what the source has seen change and not read yet
// (source.Lagging): a Kubernetes source under a stream of changes faster
// than its client's rate, until it reads them in bulk.
type SourceBacklog struct {
	Objects int        `json:"objects"`
	Since   *time.Time `json:"since,omitempty"`
}

// backlogStatus is /status's backlog, and cs with its SourceBehind
// condition; none for a source that cannot lag (backlog nil).
func backlogStatus(backlog func() source.Backlog, cs []Condition) (*SourceBacklog, []Condition) {
	if backlog == nil {
		return nil, cs
	}
	b := backlog()
	out := &SourceBacklog{Objects: b.Objects}
	if !b.Since.IsZero() {
		out.Since = &b.Since
	}
	return out, append(cs, backlogCondition(out))
}

// backlogCondition is /status's SourceBehind condition.
func backlogCondition(b *SourceBacklog) Condition {
	c := Condition{Type: "SourceBehind", Status: "False", Reason: "CaughtUp", Message: "the source has read every change it has seen"}
	if b.Objects > 0 {
		c.Status, c.Reason = "True", "ChangesNotRead"
		c.Message = fmt.Sprintf("%d changed objects seen and not read yet: what is served may lag the cluster until they are (mcs_kube_backlog_objects)", b.Objects)
		if b.Since != nil {
			c.Message = fmt.Sprintf("%d changed objects seen and not read yet, since %s: what is served may lag the cluster until they are (mcs_kube_backlog_objects)", b.Objects, b.Since.UTC().Format(time.RFC3339))
		}
	}
	return c
}
