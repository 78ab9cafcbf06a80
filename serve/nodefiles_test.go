package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/render"
)

func TestReadNodeFiles(t *testing.T) {
	dir := t.TempDir()
	kc, ca := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "ca.crt")
	os.WriteFile(kc, []byte("apiVersion: v1\n"), 0o600)
	os.WriteFile(ca, []byte("PEM\n"), 0o644)
	missing := filepath.Join(dir, "none")
	for _, tc := range []struct {
		name, kubeconfig, ca string
		want                 NodeFiles
		err                  string
	}{
		{name: "none"},
		{name: "both", kubeconfig: kc, ca: ca, want: NodeFiles{Kubeconfig: []byte("apiVersion: v1\n"), KubeletCA: []byte("PEM\n")}},
		{name: "kubeconfig missing", kubeconfig: missing, ca: ca, err: "--bootstrap-kubeconfig: open " + missing},
		{name: "CA missing", kubeconfig: kc, ca: missing, err: "--kubelet-ca: open " + missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadNodeFiles(tc.kubeconfig, tc.ca)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got.Kubeconfig) != string(tc.want.Kubeconfig) || string(got.KubeletCA) != string(tc.want.KubeletCA) {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

// The node annotations name an image-mode pool's image, the rendered
// config's pre-built-image first, as upstream's getNodeAnnotation does.
func TestNodeAnnotationsImage(t *testing.T) {
	const cur, img = "machineconfiguration.openshift.io/currentImage", "machineconfiguration.openshift.io/desiredImage"
	for _, tc := range []struct {
		name, image, preBuilt, want string
	}{
		{"not image mode", "", "", ""},
		{"image mode", "quay.example.com/a@sha256:1", "", "quay.example.com/a@sha256:1"},
		{"pre-built at install", "", "quay.example.com/b@sha256:2", "quay.example.com/b@sha256:2"},
		{"pre-built first", "quay.example.com/a@sha256:1", "quay.example.com/b@sha256:2", "quay.example.com/b@sha256:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc := &render.MachineConfig{}
			if tc.preBuilt != "" {
				mc.Metadata.Annotations = map[string]string{annotationPreBuiltImage: tc.preBuilt}
			}
			a := nodeAnnotations(&render.Result{Name: "rendered-worker-1", MachineConfig: mc, Image: tc.image})
			if a[cur] != tc.want || a[img] != tc.want || a["machineconfiguration.openshift.io/currentConfig"] != "rendered-worker-1" {
				t.Errorf("%v", a)
			}
			if _, ok := a[cur]; ok != (tc.want != "") {
				t.Errorf("image annotations present: %v", ok)
			}
		})
	}
}
