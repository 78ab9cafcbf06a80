package render

import "testing"

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
			mc := &MachineConfig{}
			if tc.preBuilt != "" {
				mc.Metadata.Annotations = map[string]string{annotationPreBuiltImage: tc.preBuilt}
			}
			a := nodeAnnotations(&Result{Name: "rendered-worker-1", MachineConfig: mc, Image: tc.image})
			if a[cur] != tc.want || a[img] != tc.want || a["machineconfiguration.openshift.io/currentConfig"] != "rendered-worker-1" {
				t.Errorf("%v", a)
			}
			if _, ok := a[cur]; ok != (tc.want != "") {
				t.Errorf("image annotations present: %v", ok)
			}
		})
	}
}
