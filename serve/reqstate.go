package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// requestState is what one request carries through the router: chi's
// route context, the request's info and the log middleware's writer, held
// by one context that the request gets once (Server.ServeHTTP). chi then
// finds its route context there instead of adding its own, and the log
// middleware needs no context of its own: a request costs one copy of
// *http.Request, not three, and no allocation of ours (pprof: the context
// copies were most of the handler's garbage, and the garbage is GC work
// that a bare server does not have). It is made anew for every request,
// never pooled: a middleware that goes on asynchronously (a timeout
// handler, a goroutine logging after the response) may still hold the
// request's context after its handler returned, and must not find another
// request's route and info in it.
type requestState struct {
	parent context.Context
	route  chi.Context
	info   requestInfo
	writer loggedWriter
}

type infoKey struct{}

func (s *requestState) Deadline() (time.Time, bool) { return s.parent.Deadline() }
func (s *requestState) Done() <-chan struct{}       { return s.parent.Done() }
func (s *requestState) Err() error                  { return s.parent.Err() }

func (s *requestState) Value(key any) any {
	switch key {
	case chi.RouteCtxKey:
		return &s.route
	case infoKey{}:
		return s
	}
	return s.parent.Value(key)
}

// withState serves r through mux with a requestState of its own in its
// context.
func withState(mux *chi.Mux, w http.ResponseWriter, r *http.Request) {
	st := &requestState{parent: r.Context()}
	st.route.Routes = mux
	mux.ServeHTTP(w, r.WithContext(st))
}

// stateOf is the request's state, or nil when it came in some other way
// than through withState.
func stateOf(r *http.Request) *requestState {
	st, _ := r.Context().Value(infoKey{}).(*requestState)
	return st
}

// infoOf is the request's info; a request that carries no state gets a
// throwaway one.
func infoOf(r *http.Request) *requestInfo {
	if st := stateOf(r); st != nil {
		return &st.info
	}
	return &requestInfo{}
}
