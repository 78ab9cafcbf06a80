package mctest

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestMachineConfig(t *testing.T) {
	var mc struct {
		Kind     string
		Metadata struct {
			Name   string
			Labels map[string]string
		}
		Spec struct {
			Config struct {
				Storage struct {
					Files []struct {
						Path     string
						Contents struct{ Source string }
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(MachineConfig("50-worker", "worker", "one")), &mc); err != nil {
		t.Fatal(err)
	}
	f := mc.Spec.Config.Storage.Files
	if mc.Kind != "MachineConfig" || mc.Metadata.Name != "50-worker" || mc.Metadata.Labels["machineconfiguration.openshift.io/role"] != "worker" ||
		len(f) != 1 || f[0].Path != "/etc/50-worker" || !strings.HasSuffix(f[0].Contents.Source, ",one") {
		t.Fatalf("%+v", mc)
	}
}

func TestConfig(t *testing.T) {
	got := Config{
		Name: "99-worker-kargs", Role: "worker", Version: "3.3.0",
		Files:  []File{{Path: "/etc/a", Source: "data:,a"}, {Path: "/etc/b", Source: "data:,b", Mode: "bogus", Overwrite: true}},
		Config: map[string]any{"kernelArguments": map[string]any{"shouldExist": []string{"nosmt"}}},
		Spec:   map[string]any{"kernelType": "realtime"},
	}.YAML()
	const want = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  labels:
    machineconfiguration.openshift.io/role: worker
  name: 99-worker-kargs
spec:
  config:
    ignition:
      version: 3.3.0
    kernelArguments:
      shouldExist:
      - nosmt
    storage:
      files:
      - contents:
          source: data:,a
        mode: 420
        path: /etc/a
      - contents:
          source: data:,b
        mode: bogus
        overwrite: true
        path: /etc/b
  kernelType: realtime
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRolePool(t *testing.T) {
	var pool struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			MachineConfigSelector struct{ MatchLabels map[string]string }
		}
	}
	if err := yaml.UnmarshalStrict([]byte(RolePool("infra")), &pool); err != nil {
		t.Fatal(err)
	}
	if pool.Kind != "MachineConfigPool" || pool.Metadata.Name != "infra" ||
		len(pool.Spec.MachineConfigSelector.MatchLabels) != 1 || pool.Spec.MachineConfigSelector.MatchLabels["machineconfiguration.openshift.io/role"] != "infra" {
		t.Fatalf("%+v", pool)
	}
}
