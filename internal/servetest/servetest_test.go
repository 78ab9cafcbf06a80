package servetest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
	deadline := time.Now().Add(30 * time.Second)
	for srv.Snapshot() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("nothing served: %+v", srv.Status().LastError)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.Status().Source; got != cluster {
		t.Errorf("status source %q", got)
	}
}
