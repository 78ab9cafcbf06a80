package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// The images of the cluster's streams (digests, as the CRD wants them).
var (
	rhel9OS   = "quay.io/openshift-release-dev/rhcos@sha256:" + strings.Repeat("9", 64)
	rhel9Ext  = "quay.io/openshift-release-dev/rhcos-ext@sha256:" + strings.Repeat("9e", 32)
	rhel10OS  = "quay.io/openshift-release-dev/rhcos@sha256:" + strings.Repeat("a", 64)
	rhel10Ext = "quay.io/openshift-release-dev/rhcos-ext@sha256:" + strings.Repeat("ae", 32)
	customOS  = "registry.example.com/custom/os@sha256:" + strings.Repeat("c", 64)
)

// osImageStream is the cluster's OSImageStream, rhel-9 by default, as the
// MCO publishes it (annotated with its version unless version is "").
func osImageStream(version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "OSImageStream",
		"metadata": map[string]any{"name": "cluster"},
		"spec":     map[string]any{"defaultStream": "rhel-9"},
		"status": map[string]any{"defaultStream": "rhel-9", "availableStreams": []any{
			map[string]any{"name": "rhel-9", "osImage": rhel9OS, "osExtensionsImage": rhel9Ext},
			map[string]any{"name": "rhel-10", "osImage": rhel10OS, "osExtensionsImage": rhel10Ext},
		}},
	}}
	if version != "" {
		u.SetAnnotations(map[string]string{render.AnnotationReleaseImageVersion: version})
	}
	return u
}

// streamPool is poolObject on stream ("": none named).
func streamPool(t *testing.T, name, stream string) *unstructured.Unstructured {
	p := poolObject(t, name)
	if stream != "" {
		p.Object["spec"].(map[string]any)["osImageStream"] = map[string]any{"name": stream}
	}
	return p
}

// poolOnImage waits until the pool names a rendered config with the OS
// image want (and extensions image ext, unless "").
func poolOnImage(t *testing.T, cp *kubetest.ControlPlane, poolName, want, ext string) {
	t.Helper()
	kubetest.Eventually(t, 20*time.Second, poolName+" on "+want, func() error {
		p := pool(t, cp, poolName)
		name := configuration(p)
		mc := renderedConfigs(t, cp, poolName)[name]
		if mc == nil {
			return fmt.Errorf("names %q; RenderDegraded %v, RenderPending %v", name, poolCondition(p, conditionRenderDegraded), poolCondition(p, conditionRenderPending))
		}
		os, _, _ := unstructured.NestedString(mc.Object, "spec", "osImageURL")
		e, _, _ := unstructured.NestedString(mc.Object, "spec", "baseOSExtensionsContainerImage")
		if os != want || (ext != "" && e != ext) {
			return fmt.Errorf("%s: osImageURL %s, extensions %s", name, os, e)
		}
		return nil
	})
}

// degradedSaying waits for the pool's RenderDegraded to say msg, and checks
// the pool still names before.
func degradedSaying(t *testing.T, cp *kubetest.ControlPlane, poolName, before, msg string) {
	t.Helper()
	kubetest.Eventually(t, 20*time.Second, poolName+" refused", func() error {
		cond := poolCondition(pool(t, cp, poolName), conditionRenderDegraded)
		if cond == nil || cond["status"] != "True" || !strings.Contains(fmt.Sprint(cond["message"]), msg) {
			return fmt.Errorf("RenderDegraded %v", cond)
		}
		return nil
	})
	if n := configuration(pool(t, cp, poolName)); n != before {
		t.Fatalf("%s moved from %s to %s", poolName, before, n)
	}
}

func setStream(t *testing.T, cp *kubetest.ControlPlane, poolName, stream string) {
	t.Helper()
	p := pool(t, cp, poolName)
	spec := p.Object["spec"].(map[string]any)
	delete(spec, "osImageStream")
	if stream != "" {
		spec["osImageStream"] = map[string]any{"name": stream}
	}
	cp.Apply(t, p)
}

// OSImageStream as upstream's render controller and its tests have it, with
// openshift/api's real CRDs: each pool gets its stream's OS images (its
// own, a custom pool the worker pool's, else the default), follows the
// worker pool when that changes, an osImageURL override conflicts with a
// stream named on the pool (RenderDegraded, upstream's message), runc is
// refused on a RHEL 10 stream, and an OSImageStream of another controller
// version is waited for.
func TestOSImageStream(t *testing.T) {
	cp := needControlPlane(t)
	cp.DeleteAll(t, containerRuntimeConfigs)
	cp.Apply(t, controllerConfig(t, nil), osImageStream("v1"),
		streamPool(t, "worker", "rhel-10"), streamPool(t, "infra", ""), streamPool(t, "edge", "rhel-9"),
		mcObject(t, "00-worker", "worker", "base"))
	c := startController(t, cp, Config{})

	t.Run("each pool's stream", func(t *testing.T) {
		poolOnImage(t, cp, "worker", rhel10OS, rhel10Ext)
		poolOnImage(t, cp, "infra", rhel10OS, rhel10Ext) // inherits worker's
		poolOnImage(t, cp, "edge", rhel9OS, rhel9Ext)
	})
	t.Run("custom pools follow the worker pool's stream", func(t *testing.T) {
		setStream(t, cp, "worker", "")
		poolOnImage(t, cp, "worker", rhel9OS, rhel9Ext) // the default
		poolOnImage(t, cp, "infra", rhel9OS, rhel9Ext)
		setStream(t, cp, "worker", "rhel-10")
		poolOnImage(t, cp, "infra", rhel10OS, rhel10Ext)
	})
	t.Run("osImageURL override with a stream named on the pool", func(t *testing.T) {
		before := configuration(pool(t, cp, "edge"))
		cp.Apply(t, kubetest.Object(t, mctest.Config{Name: "50-edge-os", Role: "edge", Spec: map[string]any{"osImageURL": customOS}}.YAML()))
		degradedSaying(t, cp, "edge", before, "cannot override MachineConfig osImageURL and set MachineConfigPool spec.osImageStream.name simultaneously (MachineConfig 50-edge-os")
		setStream(t, cp, "edge", "")
		poolOnImage(t, cp, "edge", customOS, "")
		kubetest.Eventually(t, 10*time.Second, "the OSImageURLOverridden Event", func() error { return hasEvent(t, cp, "edge", "OSImageURLOverridden") })
		if v := testutil.ToFloat64(c.m.osImageURLOverride.WithLabelValues("edge")); v != 1 {
			t.Errorf("os_image_url_override{pool=edge} %v, want 1", v)
		}
		deleteMC(t, cp, "50-edge-os")
	})
	t.Run("runc on a RHEL 10 stream", func(t *testing.T) {
		before := configuration(pool(t, cp, "worker"))
		crc := kubeletConfig(t, "ContainerRuntimeConfig", "runc", "worker", map[string]any{"observedGeneration": int64(1), "conditions": []any{
			map[string]any{"type": "Success", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "ok"}}})
		crc.Object["spec"].(map[string]any)["containerRuntimeConfig"] = map[string]any{"defaultRuntime": "runc"}
		// What the ContainerRuntimeConfig controller generates for it.
		generated := mctest.Config{Name: "99-worker-generated-containerruntime", Role: "worker",
			Files: []mctest.File{{Path: "/etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime", Source: "data:,%5Bcrio.runtime%5D%0Adefault_runtime%20%3D%20%22runc%22%0A"}}}
		cp.Apply(t, crc, kubetest.Object(t, generated.YAML()))
		degradedSaying(t, cp, "worker", before, "MachineConfigPool worker targets a RHEL 10 OS image where runc is not available. To unblock, migrate to crun")
		degradedSaying(t, cp, "infra", configuration(pool(t, cp, "infra")), "MachineConfigPool infra targets a RHEL 10 OS image")
		setStream(t, cp, "worker", "rhel-9") // infra follows
		poolOnImage(t, cp, "worker", rhel9OS, rhel9Ext)
		poolOnImage(t, cp, "infra", rhel9OS, rhel9Ext)
		deleteMC(t, cp, "99-worker-generated-containerruntime")
		cp.DeleteAll(t, containerRuntimeConfigs)
	})
	t.Run("an OSImageStream of another version", func(t *testing.T) {
		// The last subtest's deletion lands first: the wait below must see
		// the worker pool keep the config it has.
		kubetest.Eventually(t, 20*time.Second, "worker written without the deleted MachineConfig", func() error {
			src, _, _ := unstructured.NestedSlice(pool(t, cp, "worker").Object, "spec", "configuration", "source")
			if strings.Contains(fmt.Sprint(src), "99-worker-generated-containerruntime") {
				return fmt.Errorf("source %v", src)
			}
			return nil
		})
		gen := mcObject(t, "00-worker", "worker", "base")
		gen.SetAnnotations(map[string]string{render.AnnotationGeneratedByController: "v2"})
		cp.Apply(t, gen)
		waitsOn(t, cp, c, "worker", waitOSImageStream, "ignoring OSImageStream with version v1 (my version: v2)")
		cp.Apply(t, osImageStream("v2"))
		poolOnImage(t, cp, "worker", rhel9OS, rhel9Ext)
	})
	cp.DeleteAll(t, kube.OSImageStreams)
}

// waitsOn is waits for a pool already written: it keeps its config.
func waitsOn(t *testing.T, cp *kubetest.ControlPlane, c *running, poolName, reason, msg string) {
	t.Helper()
	before := configuration(pool(t, cp, poolName))
	showsWaiting(t, cp, c, poolName, reason, msg)
	if n := configuration(pool(t, cp, poolName)); n != before {
		t.Fatalf("%s moved from %s to %s while waiting", poolName, before, n)
	}
}
