package render

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/vincent-petithory/dataurl"
)

// The images of the tests' streams and ControllerConfig.
const (
	rhel9Image     = "quay.io/openshift/rhcos@sha256:" + "99"
	rhel9Ext       = "quay.io/openshift/rhcos-ext@sha256:" + "9e"
	rhel10Image    = "quay.io/openshift/rhcos@sha256:" + "10"
	rhel10Ext      = "quay.io/openshift/rhcos-ext@sha256:" + "1e"
	centos10Image  = "quay.io/okd/scos@sha256:" + "c1"
	ccImage        = "quay.io/openshift/cc-os@sha256:" + "cc"
	overrideImage  = "registry.example.com/custom-os@sha256:" + "ff"
	streamTestRole = "machineconfiguration.openshift.io/role"
)

// poolDoc is a pool selecting its role's MachineConfigs, on stream when
// not empty.
func poolDoc(name, stream string) string {
	d := fmt.Sprintf("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: %s\nspec:\n  machineConfigSelector:\n    matchLabels:\n      %s: %s\n", name, streamTestRole, name)
	if stream != "" {
		d += fmt.Sprintf("  osImageStream:\n    name: %s\n", stream)
	}
	return d
}

// streamDoc is the cluster's OSImageStream: rhel-9, rhel-10 and centos-10,
// defaulting to def.
func streamDoc(def string) string {
	return fmt.Sprintf(`apiVersion: machineconfiguration.openshift.io/v1
kind: OSImageStream
metadata:
  name: cluster
spec:
  defaultStream: %[1]s
status:
  defaultStream: %[1]s
  availableStreams:
  - {name: rhel-9, osImage: %q, osExtensionsImage: %q}
  - {name: rhel-10, osImage: %q, osExtensionsImage: %q}
  - {name: centos-10, osImage: %q, osExtensionsImage: %q}
`, def, rhel9Image, rhel9Ext, rhel10Image, rhel10Ext, centos10Image, centos10Image)
}

const ccDoc = `apiVersion: machineconfiguration.openshift.io/v1
kind: ControllerConfig
metadata:
  name: machine-config-controller
spec:
  baseOSContainerImage: ` + ccImage + `
  baseOSExtensionsContainerImage: quay.io/openshift/cc-ext@sha256:ce
`

// Upstream's TestGetOSImageStreamNameForPool, and which stream's images
// each pool gets (GetOSImageStreamSetByName, GetBaseImageContainer).
func TestPoolStream(t *testing.T) {
	for _, tc := range []struct {
		name      string
		docs      []string
		pool      string
		wantImage string
		wantExt   string
	}{
		{"custom pool with explicit stream uses explicit stream", []string{poolDoc("infra", "rhel-10"), poolDoc("worker", "rhel-9")}, "infra", rhel10Image, rhel10Ext},
		{"custom pool without stream inherits from worker", []string{poolDoc("infra", ""), poolDoc("worker", "rhel-10")}, "infra", rhel10Image, rhel10Ext},
		{"custom pool without stream, worker has no stream, uses default", []string{poolDoc("infra", ""), poolDoc("worker", "")}, "infra", rhel9Image, rhel9Ext},
		{"custom pool without stream, worker doesn't exist, uses default", []string{poolDoc("infra", "")}, "infra", rhel9Image, rhel9Ext},
		{"standard pool (master) with explicit stream uses explicit stream", []string{poolDoc("master", "rhel-10"), poolDoc("worker", "rhel-9")}, "master", rhel10Image, rhel10Ext},
		{"standard pool (master) without stream does not inherit from worker", []string{poolDoc("master", ""), poolDoc("worker", "rhel-10")}, "master", rhel9Image, rhel9Ext},
		{"standard pool (worker) without stream uses default", []string{poolDoc("worker", "")}, "worker", rhel9Image, rhel9Ext},
		{"standard pool (arbiter) without stream uses default", []string{poolDoc("arbiter", ""), poolDoc("worker", "rhel-10")}, "arbiter", rhel9Image, rhel9Ext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := append(tc.docs, streamDoc("rhel-9"), ccDoc, doc("00-"+tc.pool, tc.pool, `{"ignition":{"version":"3.2.0"}}`))
			res := mustRender(t, setOf(t, docs...), tc.pool, Options{})
			spec := res.MachineConfig.Spec
			if spec.OSImageURL != tc.wantImage || spec.BaseOSExtensionsContainerImage != tc.wantExt {
				t.Errorf("images %s, %s; want %s, %s", spec.OSImageURL, spec.BaseOSExtensionsContainerImage, tc.wantImage, tc.wantExt)
			}
			if a := res.MachineConfig.Metadata.Annotations[annotationOSImageURLOverridden]; a != "" {
				t.Errorf("the stream's image reads as an override (%s=%s)", annotationOSImageURLOverridden, a)
			}
		})
	}
}

// Without an OSImageStream, pools run the ControllerConfig's images; a
// stream that cannot be had fails the pool naming where it was asked for
// (upstream: "could not get OSImageStreamSet for pool …").
func TestPoolStreamErrors(t *testing.T) {
	mc := doc("00-infra", "infra", `{"ignition":{"version":"3.2.0"}}`)
	res := mustRender(t, setOf(t, poolDoc("infra", ""), ccDoc, mc), "infra", Options{})
	if got := res.MachineConfig.Spec.OSImageURL; got != ccImage {
		t.Errorf("without an OSImageStream: osImageURL %s, want the ControllerConfig's %s", got, ccImage)
	}
	noDefault := strings.Replace(streamDoc("rhel-9"), "  defaultStream: rhel-9\n  availableStreams", "  defaultStream: rhel-8\n  availableStreams", 1)
	for _, tc := range []struct {
		name       string
		docs       []string
		wantObject string
		wantPath   string
		wantMsg    string
	}{
		{"named stream not available", []string{poolDoc("infra", "rhel-11"), streamDoc("rhel-9")}, "MachineConfigPool/infra", "$.spec.osImageStream.name",
			`could not get OSImageStreamSet for pool infra: osimagestreams.machineconfiguration.openshift.io "rhel-11" not found`},
		{"inherited stream not available", []string{poolDoc("infra", ""), poolDoc("worker", "rhel-11"), streamDoc("rhel-9")}, "MachineConfigPool/worker", "$.spec.osImageStream.name",
			`osimagestreams.machineconfiguration.openshift.io "rhel-11" not found (pool infra inherits pool worker's spec.osImageStream.name)`},
		{"stream named without an OSImageStream", []string{poolDoc("infra", "rhel-10")}, "MachineConfigPool/infra", "$.spec.osImageStream.name",
			`could not get OSImageStream for pool infra: osimagestreams.machineconfiguration.openshift.io "cluster" not found`},
		{"default stream not available", []string{poolDoc("infra", ""), noDefault}, "OSImageStream/cluster", "$.status.defaultStream",
			`"rhel-8" not found (the default stream)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := renderErrs(t, setOf(t, append(tc.docs, ccDoc, mc)...), "infra", Options{})
			if len(errs) != 1 || errs[0].Object != tc.wantObject || errs[0].Path.String() != tc.wantPath || !strings.Contains(errs[0].Message, tc.wantMsg) {
				t.Fatalf("errors %v; want one at %s %s saying %q", errs, tc.wantObject, tc.wantPath, tc.wantMsg)
			}
		})
	}
}

// crioDropIn is a MachineConfig of the worker role holding CRI-O drop-ins
// (path → default_runtime), gzipped when gz.
func crioDropIn(t *testing.T, name string, gz bool, runtimes ...[2]string) string {
	var files []string
	for _, r := range runtimes {
		body := []byte("[crio.runtime]\ndefault_runtime = \"" + r[1] + "\"\n")
		extra := ""
		if gz {
			var b bytes.Buffer
			z := gzip.NewWriter(&b)
			if _, err := z.Write(body); err != nil {
				t.Fatal(err)
			}
			if err := z.Close(); err != nil {
				t.Fatal(err)
			}
			body, extra = b.Bytes(), `,"compression":"gzip"`
		}
		src := "data:;base64," + base64.StdEncoding.EncodeToString(body)
		if !gz {
			src = "data:," + dataurl.EscapeString(string(body))
		}
		files = append(files, fmt.Sprintf(`{"path":%q,"contents":{"source":%q%s}}`, r[0], src, extra))
	}
	return doc(name, "worker", `{"ignition":{"version":"3.2.0"},"storage":{"files":[`+strings.Join(files, ",")+`]}}`)
}

// Upstream's TestValidateNoRuncOnRHEL10 and TestRunBootstrapBlocksRuncOnRHEL10:
// runc left as CRI-O's runtime on a RHEL 10 (or CentOS 10) stream fails the
// pool with upstream's message, naming the MachineConfig and drop-in.
func TestRuncOnRHEL10(t *testing.T) {
	runc := [2]string{"/etc/crio/crio.conf.d/00-default", "runc"}
	crun := [2]string{"/etc/crio/crio.conf.d/00-default", "crun"}
	laterCrun := [2]string{"/etc/crio/crio.conf.d/01-ctrcfg", "crun"}
	for _, tc := range []struct {
		name    string
		stream  string // the worker pool's; "-": no OSImageStream at all
		mc      string
		wantErr bool
	}{
		{"runc on RHEL 10 should error", "rhel-10", crioDropIn(t, "99-worker-runc", false, runc), true},
		{"crun on RHEL 10 should succeed", "rhel-10", crioDropIn(t, "99-worker-runc", false, crun), false},
		{"runc on RHEL 9 should succeed", "rhel-9", crioDropIn(t, "99-worker-runc", false, runc), false},
		{"runc with nil OSImageStreamSet should succeed", "-", crioDropIn(t, "99-worker-runc", false, runc), false},
		{"runc on CentOS 10 should error", "centos-10", crioDropIn(t, "99-worker-runc", false, runc), true},
		{"no CRI-O drop-ins on RHEL 10 should succeed", "rhel-10", doc("99-worker-runc", "worker", file("/etc/motd", "data:,hi")), false},
		{"runc overridden by crun on RHEL 10 should succeed", "rhel-10", crioDropIn(t, "99-worker-runc", false, runc, laterCrun), false},
		{"gzipped runc on RHEL 10 should error", "rhel-10", crioDropIn(t, "99-worker-runc", true, runc), true},
		{"runc on the default stream RHEL 10 should error", "", crioDropIn(t, "99-worker-runc", false, runc), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := []string{ccDoc, tc.mc, doc("00-worker", "worker", `{"ignition":{"version":"3.2.0"}}`)}
			if tc.stream != "-" {
				docs = append(docs, poolDoc("worker", tc.stream), streamDoc("rhel-10"))
			} else {
				docs = append(docs, poolDoc("worker", ""))
			}
			_, err := setOf(t, docs...).RenderPool("worker", Options{})
			if !tc.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("rendered; want runc refused")
			}
			for _, want := range []string{"MachineConfig/99-worker-runc", "$.spec.config.storage.files", "MachineConfigPool worker targets a RHEL 10 OS image where runc is not available", "/etc/crio/crio.conf.d/00-default"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// Upstream's TestGenerateMachineConfigOverrideOSImageURL and
// TestGenerateMachineConfigCannotOverrideOSImageURLWhenOSImageStreamSet: a
// MachineConfig's osImageURL overrides the stream's image, unless the pool
// itself names a stream; an override skips the runc check (upstream
// inspects the image's labels, which mcs does not read).
func TestOSImageURLOverrideAndStream(t *testing.T) {
	override := doc("50-worker-os", "worker", `{"ignition":{"version":"3.2.0"}}`, "osImageURL: "+overrideImage)
	base := doc("00-worker", "worker", `{"ignition":{"version":"3.2.0"}}`)
	runc := crioDropIn(t, "99-worker-runc", false, [2]string{"/etc/crio/crio.conf.d/00-default", "runc"})

	// A stream inherited from the worker pool is not the pool's own: the
	// override wins, as upstream checks the pool's spec alone.
	infraOverride := doc("50-infra-os", "infra", `{"ignition":{"version":"3.2.0"}}`, "osImageURL: "+overrideImage)
	inherited := mustRender(t, setOf(t, poolDoc("infra", ""), poolDoc("worker", "rhel-10"), streamDoc("rhel-9"), ccDoc, infraOverride), "infra", Options{})
	if got := inherited.MachineConfig.Spec.OSImageURL; got != overrideImage {
		t.Errorf("infra inheriting rhel-10: osImageURL %s, want the override %s", got, overrideImage)
	}
	res := mustRender(t, setOf(t, poolDoc("worker", ""), streamDoc("rhel-10"), ccDoc, base, override, runc), "worker", Options{})
	if got := res.MachineConfig.Spec.OSImageURL; got != overrideImage {
		t.Errorf("osImageURL %s, want the override %s", got, overrideImage)
	}
	if res.MachineConfig.Metadata.Annotations[annotationOSImageURLOverridden] != "true" {
		t.Errorf("annotations %v: want %s=true", res.MachineConfig.Metadata.Annotations, annotationOSImageURLOverridden)
	}

	errs := renderErrs(t, setOf(t, poolDoc("worker", "rhel-10"), streamDoc("rhel-10"), ccDoc, base, override), "worker", Options{})
	want := "cannot override MachineConfig osImageURL and set MachineConfigPool spec.osImageStream.name simultaneously (MachineConfig 50-worker-os sets osImageURL " + overrideImage
	if len(errs) != 1 || errs[0].Object != "MachineConfigPool/worker" || errs[0].Path.String() != "$.spec.osImageStream.name" || !strings.HasPrefix(errs[0].Message, want) {
		t.Fatalf("errors %v; want one at MachineConfigPool/worker $.spec.osImageStream.name starting %q", errs, want)
	}
}
