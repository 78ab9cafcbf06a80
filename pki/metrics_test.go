package pki

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// Each pass's report sets when each user-data Secret's pointer config
// stops working (0: it does not now); a Secret gone leaves no series.
func TestObserve(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := New(Config{Clients: Clients{Kube: kubefake.NewClientset(), Dynamic: fake.NewSimpleDynamicClient(runtime.NewScheme())},
		Lifetimes: DefaultLifetimes, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	until := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	m.observe(&Report{Pointers: []PointerReport{{Secret: "openshift-machine-api/worker-user-data", WorksUntil: until}, {Secret: "openshift-machine-api/old"}}})
	want := `# HELP mcs_pki_pointer_config_works_until_timestamp_seconds Per user-data Secret, when a node booting with its pointer config stops reaching the server (its CAs expire, or what they verify is replaced); 0 when it does not now.
# TYPE mcs_pki_pointer_config_works_until_timestamp_seconds gauge
mcs_pki_pointer_config_works_until_timestamp_seconds{secret="openshift-machine-api/old"} 0
mcs_pki_pointer_config_works_until_timestamp_seconds{secret="openshift-machine-api/worker-user-data"} 1.7987616e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	m.observe(&Report{Pointers: []PointerReport{{Secret: "openshift-machine-api/worker-user-data", WorksUntil: until}}})
	if n := testutil.CollectAndCount(m.worksUntil); n != 1 {
		t.Errorf("%d series after a Secret was deleted, want 1", n)
	}
	if _, err := New(Config{Clients: m.cfg.Clients, Lifetimes: DefaultLifetimes, Registry: reg}); err == nil {
		t.Error("a second manager on one registry: no error")
	}
}
