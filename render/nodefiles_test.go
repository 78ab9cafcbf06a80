package render

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"

	"github.com/vincent-petithory/dataurl"
)

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
			a := nodeAnnotations(&Result{Name: "rendered-worker-1", MachineConfig: mc, Image: tc.image}, "")
			if a[cur] != tc.want || a[img] != tc.want || a["machineconfiguration.openshift.io/currentConfig"] != "rendered-worker-1" {
				t.Errorf("%v", a)
			}
			if _, ok := a[cur]; ok != (tc.want != "") {
				t.Errorf("image annotations present: %v", ok)
			}
		})
	}
}

// The server's URL for nodes, as machine-config-operator PR #6124 makes it
// from the Infrastructure (the ControllerConfig's spec.infra copy).
func TestServerURL(t *testing.T) {
	for name, tc := range map[string]struct{ status, want string }{
		"api-int":               {`{"apiServerInternalURI":"https://api-int.c.example.com:6443","platformStatus":{"type":"AWS"}}`, "https://api-int.c.example.com:22623"},
		"bare metal":            {`{"apiServerInternalURI":"https://api-int.c:6443","platformStatus":{"type":"BareMetal","baremetal":{"apiServerInternalIPs":["192.0.2.5","192.0.2.6"]}}}`, "https://192.0.2.5:22623"},
		"openstack ipv6":        {`{"apiServerInternalURI":"https://api-int.c:6443","platformStatus":{"type":"OpenStack","openstack":{"apiServerInternalIPs":["fd00::5"]}}}`, "https://[fd00::5]:22623"},
		"ovirt":                 {`{"apiServerInternalURI":"https://api-int.c:6443","platformStatus":{"type":"Ovirt","ovirt":{"apiServerInternalIPs":["192.0.2.7"]}}}`, "https://192.0.2.7:22623"},
		"vsphere no vip":        {`{"apiServerInternalURI":"https://api-int.c:6443","platformStatus":{"type":"VSphere","vsphere":{}}}`, "https://api-int.c:22623"},
		"other platform's vips": {`{"apiServerInternalURI":"https://api-int.c:6443","platformStatus":{"type":"AWS","baremetal":{"apiServerInternalIPs":["192.0.2.5"]}}}`, "https://api-int.c:22623"},
		"none":                  {`{}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			var st infraStatus
			if err := json.Unmarshal([]byte(tc.status), &st); err != nil {
				t.Fatal(err)
			}
			if got := st.serverURL(); got != tc.want {
				t.Errorf("serverURL = %q, want %q", got, tc.want)
			}
		})
	}
}

// With a ControllerConfig naming the root CA and the Infrastructure, each
// config carries /etc/machine-config-daemon/mcs-ca-bundle.crt after the
// cloud CA and the machineConfigServerURL node annotation, as PR #6124;
// both are in the key.
func TestServerCAAndURL(t *testing.T) {
	var l Loader
	l.Data("cc.yaml", []byte(`apiVersion: machineconfiguration.openshift.io/v1
kind: ControllerConfig
metadata: {name: machine-config-controller}
spec:
  rootCAData: `+base64.StdEncoding.EncodeToString([]byte("ROOT CA"))+`
  infra:
    status: {apiServerInternalURI: "https://api-int.c.example.com:6443", platformStatus: {type: AWS}}
`))
	l.Data("mc.yaml", []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-worker","labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"config":{"ignition":{"version":"3.2.0"}}}}`))
	set, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	cc := set.ControllerConfig()
	if cc == nil || string(cc.RootCAData) != "ROOT CA" || cc.ServerURL != "https://api-int.c.example.com:22623" {
		t.Fatalf("ControllerConfig %+v", cc)
	}
	res, err := set.RenderPool("worker", Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := NodeFiles{}.Files(res, cc)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
		if f.Path != pathAnnotations {
			continue
		}
		d, err := dataurl.DecodeString(*f.Contents.Source)
		var a map[string]string
		if err != nil || json.Unmarshal(d.Data, &a) != nil || a[annotationServerURL] != "https://api-int.c.example.com:22623" {
			t.Errorf("node annotations without the server URL: %s", *f.Contents.Source)
		}
	}
	if i := slices.Index(paths, pathServerCA); i < 0 || paths[i+1] != pathAnnotations {
		t.Errorf("files %q: want %s before the node annotations", paths, pathServerCA)
	}
	other := *cc
	other.ServerURL = "https://192.0.2.5:22623"
	third := *cc
	third.RootCAData = []byte("OTHER")
	if k := (NodeFiles{}).Key(cc); k == (NodeFiles{}).Key(&other) || k == (NodeFiles{}).Key(&third) {
		t.Error("the key does not change with the root CA or the server's URL")
	}
}
