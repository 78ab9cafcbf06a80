package status

import (
	"strings"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/source"
)

// A source that cannot lag adds nothing to /status; one that can shows its
// backlog and SourceBehind, True while objects wait.
func TestBacklogStatus(t *testing.T) {
	if b, cs := backlogStatus(nil, nil); b != nil || cs != nil {
		t.Fatalf("no source backlog: %+v %+v", b, cs)
	}
	since := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		in     source.Backlog
		status string
		msg    string
	}{
		{"caught up", source.Backlog{}, "False", "the source has read every change it has seen"},
		{"behind", source.Backlog{Objects: 42, Since: since}, "True", "42 changed objects seen and not read yet, since 2026-11-27T03:00:00Z: what is served may lag the cluster"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, cs := backlogStatus(func() source.Backlog { return c.in }, nil)
			if b.Objects != c.in.Objects || (b.Since != nil) != !c.in.Since.IsZero() || len(cs) != 1 {
				t.Fatalf("backlog %+v, conditions %+v", b, cs)
			}
			if cs[0].Type != "SourceBehind" || cs[0].Status != c.status || !strings.Contains(cs[0].Message, c.msg) {
				t.Fatalf("condition %+v", cs[0])
			}
		})
	}
}
