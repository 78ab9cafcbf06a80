package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
)

// A request's context kept past its handler (as an asynchronous
// middleware would keep it) finds its parts detached: no route, no info,
// never the next request's, which gets parts of its own.
func TestRequestStateDetached(t *testing.T) {
	mux := chi.NewRouter()
	var kept []*http.Request
	mux.Get("/config/{pool}", func(w http.ResponseWriter, r *http.Request) {
		if chi.URLParam(r, "pool") == "" || partsOf(r) == nil {
			t.Error("no parts while the handler runs")
		}
		infoOf(r).pool = chi.URLParam(r, "pool")
		kept = append(kept, r)
	})
	for _, pool := range []string{"worker", "master"} {
		withState(mux, httptest.NewRecorder(), httptest.NewRequest("GET", "/config/"+pool, nil))
	}
	for i, r := range kept {
		if rc := chi.RouteContext(r.Context()); rc != nil {
			t.Errorf("request %d: a route context after its handler returned: %v", i, rc.URLParams)
		}
		if partsOf(r) != nil || infoOf(r).pool != "" || chi.URLParam(r, "pool") != "" {
			t.Errorf("request %d: parts after its handler returned", i)
		}
	}
}
