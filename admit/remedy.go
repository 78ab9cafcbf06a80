package admit

import (
	"fmt"
	"strings"
)

// denyRemedy says what the writer of a refused MachineConfig can do: drop
// the fields above the ceiling (kernel arguments to add have a place every
// spec reads), or wait for the ceiling to rise, which it does by itself
// only when it follows the ClusterVersion.
func denyRemedy(res *Result, c Ceiling) string {
	var b strings.Builder
	b.WriteString("To store it: remove those fields")
	for _, r := range res.Above {
		if strings.HasPrefix(r.Path.String(), "$.kernelArguments.shouldExist") {
			b.WriteString(" (move kernel arguments to add to the MachineConfig's spec.kernelArguments, which every spec reads)")
			break
		}
	}
	fixed := strings.HasPrefix(c.Source, "--max-spec")
	if fixed {
		fmt.Fprintf(&b, ", or have a cluster administrator raise mcs admit's --max-spec to %s once the release a rollback returns to reads it", res.Needs)
	} else {
		fmt.Fprintf(&b, ", or write it again once the cluster's update has completed and the release a rollback returns to reads spec %s", res.Needs)
	}
	b.WriteString("; a cluster administrator can also have it stored with a warning (mcs admit --above-ceiling=warn)")
	return b.String()
}
