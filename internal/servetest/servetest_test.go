package servetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/serve"
	"github.com/ignition-mcs/mcs/source"
)

const cluster = "../../fixtures/cluster"

func TestHandler(t *testing.T) {
	s, byPool := Handler(t, cluster, serve.Config{})
	ts := httptest.NewServer(s)
	defer ts.Close()
	if byPool["worker"] == nil || byPool["master"] == nil {
		t.Fatalf("pools %v", byPool)
	}
	resp, err := http.Get(ts.URL + "/config/worker")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestReloading(t *testing.T) {
	srv := Reloading(t, &source.Dir{Path: cluster, Poll: time.Hour}, serve.Config{}, nil)
	testkit.Eventually(t, 30*time.Second, "a render served", func() error {
		if srv.Snapshot() == nil {
			return fmt.Errorf("nothing served: %+v", srv.Status().LastError)
		}
		return nil
	})
	if got := srv.Status().Source; got != cluster {
		t.Errorf("status source %q", got)
	}
}
