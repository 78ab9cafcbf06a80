package kube

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/render"
)

// The trigger keys hold what the render reads: every spec field of a pool
// a render reads (render.PoolSpecFieldsRead) changes the pool's key and
// nothing else of it does; every field of the render's ControllerConfig,
// set through the object as the loader decodes it, changes the
// ControllerConfig's key. A field the render starts reading fails here
// until the key has it.
func TestTriggerKeysCoverTheRender(t *testing.T) {
	t.Run("MachineConfigPool", func(t *testing.T) {
		s := &Source{cfg: Config{Mode: ModeSelf}}
		base := poolObject(t, `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker"},"spec":{}}`)
		want := s.poolKey(base)
		for _, f := range render.PoolSpecFieldsRead() {
			u := base.DeepCopy()
			setField(t, u, map[string]any{"x": "y"}, "spec", f)
			if s.poolKey(u) == want {
				t.Errorf("spec.%s, which a render reads, changes no key", f)
			}
		}
		for _, path := range [][]string{{"spec", "nodeSelector"}, {"spec", "configuration"}, {"status", "x"}, {"metadata", "labels"}, {"metadata", "resourceVersion"}} {
			u := base.DeepCopy()
			setField(t, u, "changed", path...)
			if s.poolKey(u) != want {
				t.Errorf("%v, which no render reads, changes the key", path)
			}
		}
	})
	t.Run("ControllerConfig", func(t *testing.T) {
		// Where each field of the render's ControllerConfig is read from; nil:
		// not from the object's content.
		paths := map[string][]string{
			"BaseOSContainerImage":           {"spec", "baseOSContainerImage"},
			"BaseOSExtensionsContainerImage": {"spec", "baseOSExtensionsContainerImage"},
			"KubeAPIServerServingCAData":     {"spec", "kubeAPIServerServingCAData"},
			"CloudProviderCAData":            {"spec", "cloudProviderCAData"},
			"RootCAData":                     {"spec", "rootCAData"},
			"ReleaseImageVersion":            {"metadata", "annotations", render.AnnotationReleaseImageVersion},
			"ControllerVersion":              {"metadata", "annotations", render.AnnotationControllerConfigVersion},
			"ServerURL":                      {"spec", "infra", "status", "apiServerInternalURI"},
			"Source":                         nil, // where it was read
			"Name":                           nil, // another name is another object
		}
		base := poolObject(t, `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"ControllerConfig","metadata":{"name":"machine-config-controller"},"spec":{}}`)
		want, decoded := controllerConfigKey(base), loadControllerConfig(t, base)
		for f := range reflect.TypeFor[render.ControllerConfig]().Fields() {
			path, ok := paths[f.Name]
			if !ok {
				t.Errorf("render.ControllerConfig.%s: say here where it is read from", f.Name)
				continue
			}
			if path == nil {
				continue
			}
			u := base.DeepCopy()
			value := base64.StdEncoding.EncodeToString([]byte("changed")) // the CAs are base64
			if f.Name == "ServerURL" {
				value = "https://api-int.c.example.com:6443"
			}
			setField(t, u, value, path...)
			got := loadControllerConfig(t, u)
			if reflect.DeepEqual(reflect.ValueOf(*got).FieldByName(f.Name).Interface(), reflect.ValueOf(*decoded).FieldByName(f.Name).Interface()) {
				t.Errorf("%s: setting %v does not change it", f.Name, path)
			}
			if controllerConfigKey(u) == want {
				t.Errorf("%s (%v) changes no key", f.Name, path)
			}
		}
	})
}

func setField(t *testing.T, u *unstructured.Unstructured, v any, path ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
		t.Fatal(err)
	}
}

// loadControllerConfig is the render's reading of u.
func loadControllerConfig(t *testing.T, u *unstructured.Unstructured) *render.ControllerConfig {
	t.Helper()
	js, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	l := render.Loader{FromAPIServer: true}
	l.Data(origin, js)
	set, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	if set.ControllerConfig() == nil {
		t.Fatal("no ControllerConfig loaded")
	}
	return set.ControllerConfig()
}
