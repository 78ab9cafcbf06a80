package fetchlog

import (
	"testing"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// Counting a fetch allocates nothing once the client version is known.
func TestRecordFetchAllocs(t *testing.T) {
	rf := &Rendered{rendered: "rendered-worker-x"}
	rf.Record("v2.27", 1)
	if n := testkit.Allocs(1000, func() { rf.Record("v2.27", 2) }); n != 0 {
		t.Errorf("%v allocations per fetch", n)
	}
}
