package render

import (
	"encoding/json"
	"fmt"
)

// maxRenderedSize is upstream's limit on a rendered MachineConfig, in bytes
// of JSON: 1.5 MiB, what etcd stores in one object.
const maxRenderedSize = 1572864

// sizeProblem says why mc, rendered, cannot be stored, or returns "".
func sizeProblem(mc *MachineConfig) (string, error) {
	n, err := encodedSize(mc)
	if err != nil {
		return "encoding the rendered MachineConfig: " + err.Error(), err
	}
	if n > maxRenderedSize {
		return fmt.Sprintf("the rendered MachineConfig %s is %d bytes of JSON, above the limit of %d", mc.Metadata.Name, n, maxRenderedSize), ErrInvalid
	}
	return "", nil
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
