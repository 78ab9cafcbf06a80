package pki

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// Start runs the manager until stop, which returns once it has ended; a
// Config New refuses is refused.
func TestStart(t *testing.T) {
	if _, err := Start(context.Background(), Config{}); err == nil {
		t.Fatal("no clients accepted")
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		poolsGVR(): "MachineConfigPoolList", Infrastructures: "InfrastructureList",
	})
	stop, err := Start(t.Context(), Config{Clients: Clients{Kube: kubefake.NewClientset(), Dynamic: dyn}, Lifetimes: DefaultLifetimes,
		Resync: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return")
	}
}
