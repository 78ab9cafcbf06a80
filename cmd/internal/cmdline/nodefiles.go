package cmdline

import (
	"fmt"

	"github.com/ignition-mcs/mcs/internal/regularfile"
	"github.com/ignition-mcs/mcs/render"
)

// NodeFiles reads the node files from the files --bootstrap-kubeconfig and
// --kubelet-ca name; an empty name reads none. Errors name the flag.
func NodeFiles(kubeconfig, kubeletCA string) (render.NodeFiles, error) {
	var nf render.NodeFiles
	for _, f := range []struct {
		flag, path string
		dst        *[]byte
	}{{"--bootstrap-kubeconfig", kubeconfig, &nf.Kubeconfig}, {"--kubelet-ca", kubeletCA, &nf.KubeletCA}} {
		if f.path == "" {
			continue
		}
		b, _, err := regularfile.ReadFile(f.path, 16<<20) // a FIFO would hang the start
		if err != nil {
			return nf, fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.dst = b
	}
	return nf, nil
}
