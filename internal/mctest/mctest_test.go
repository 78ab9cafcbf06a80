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
