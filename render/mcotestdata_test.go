package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/internal/shareddata"
)

func TestMCOBootstrapInputs(t *testing.T) {
	dir := shareddata.Path(t, "mco-testdata", "bootstrap") // inputs from upstream's own tests
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.PoolNames(), " "); got != "layered-worker master worker" {
		t.Errorf("pools %q", got)
	}
	skipped := 0
	for _, n := range s.Notices() {
		if strings.Contains(n.Message, "is not used for rendering") {
			skipped++
		}
	}
	if skipped != 7 { // APIServer, Image, ClusterImagePolicy, FeatureGate, 2 ICSPs, MachineOSConfig
		t.Errorf("%d objects skipped, want 7: %v", skipped, s.Notices())
	}
	cc := s.ControllerConfig()
	if cc == nil || cc.Name != "machine-config-controller" {
		t.Fatalf("ControllerConfig %+v", cc)
	}
	r := mustRender(t, s, "master", Options{})
	if r.Provenance.Users["core"] != "99-master-ssh" || r.MachineConfig.Spec.OSImageURL != cc.BaseOSContainerImage {
		t.Errorf("master render %+v", r.Provenance)
	}
	// Upstream fails a pool its selector leaves empty; so does this.
	if errs := renderErrs(t, s, "layered-worker", Options{}); !errors.Is(errs[0], ErrNoConfigs) {
		t.Errorf("errors %v", errs)
	}
}

// A spec-2 MachineConfig from upstream's server tests, given as objects read elsewhere (from Kubernetes, say)
// as a Kubernetes source would: it overrides the OS image, and its kernel
// arguments and Ignition content come through.
func TestMCOServerConfigAsObjects(t *testing.T) {
	file := shareddata.Path(t, "mco-testdata", "server", "machine-configs", "test-config.yaml")
	loaded, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	mc := loaded.MachineConfigs()[0]
	mc.Metadata.Labels = map[string]string{roleLabel: "test"}
	pool := &MachineConfigPool{Metadata: ObjectMeta{Name: "test"}, Spec: MachineConfigPoolSpec{MachineConfigSelector: &LabelSelector{MatchLabels: map[string]string{roleLabel: "test"}}}, Source: "kubernetes"}
	l := &Loader{configs: []*MachineConfig{mc}, pools: []*MachineConfigPool{pool}, ccs: []*ControllerConfig{{BaseOSContainerImage: "registry.example.com/release-os@sha256:0"}}}
	s, err := l.build()
	if err != nil {
		t.Fatal(err)
	}
	r := mustRender(t, s, "test", Options{})
	spec := r.MachineConfig.Spec
	if !strings.HasPrefix(spec.OSImageURL, "registry.example.com/oscontainer@") || r.MachineConfig.Metadata.Annotations[annotationOSImageURLOverridden] != "true" {
		t.Errorf("osImageURL %q annotations %v", spec.OSImageURL, r.MachineConfig.Metadata.Annotations)
	}
	if strings.Join(spec.KernelArguments, " ") != "foo=bar nosmt" {
		t.Errorf("kernel arguments %v", spec.KernelArguments)
	}
	if r.Provenance.Files["/etc/coreos/update.conf"] != "test-config" || r.Provenance.Units["docker.service"] != "test-config" {
		t.Errorf("provenance %+v", r.Provenance)
	}
}
