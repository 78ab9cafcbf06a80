package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
)

// maxRenderedSize is upstream's limit on a rendered MachineConfig, in bytes
// of JSON: 1.5 MiB, what etcd stores in one object.
const maxRenderedSize = 1572864

// sizeProblem says why mc, rendered from order, cannot be stored, or
// returns nil. It is blamed on the MachineConfig whose Ignition config is
// largest, as that is the one to shrink, and names the next largest.
func sizeProblem(mc *MachineConfig, order []*entry, pool string) *Error {
	n, err := encodedSize(mc)
	if err != nil {
		return &Error{Object: KindMachineConfigPool + "/" + pool, Path: convert.NewPath(), Message: "encoding the rendered MachineConfig: " + err.Error(), Err: err}
	}
	if n <= maxRenderedSize {
		return nil
	}
	big := slices.Clone(order)
	slices.SortStableFunc(big, func(a, b *entry) int { return len(b.mc.Spec.Config) - len(a.mc.Spec.Config) })
	var sizes []string
	for _, e := range big[:min(3, len(big))] {
		sizes = append(sizes, fmt.Sprintf("%s %d", e.mc.Metadata.Name, len(e.mc.Spec.Config)))
	}
	top := big[0]
	return &Error{File: top.mc.Source, Line: top.doc.line(convert.NewPath("spec", "config")), Object: KindMachineConfig + "/" + top.mc.Metadata.Name, Path: convert.NewPath("spec", "config"),
		Message: fmt.Sprintf("pool %s's rendered MachineConfig %s would be %d bytes of JSON, above the limit of %d (1.5 MiB: what etcd stores in one object; OpenShift's limit too). "+
			"Largest Ignition configs, in bytes of JSON: %s. Shrink them: compress large files (contents.compression: gzip) or ship them another way (a container image)",
			pool, mc.Metadata.Name, n, maxRenderedSize, strings.Join(sizes, ", ")),
		Err: ErrInvalid}
}

// encodedSize is len(json.Marshal(mc)) without encoding the config again:
// it is compact JSON already, so it is written as it is.
func encodedSize(mc *MachineConfig) (int, error) {
	shell := *mc
	shell.Spec.Config = json.RawMessage("0")
	b, err := json.Marshal(shell)
	if err != nil {
		return 0, err
	}
	return len(b) - 1 + len(mc.Spec.Config), nil
}
