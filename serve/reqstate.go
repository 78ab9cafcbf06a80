package serve

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
)

// requestState is the context one request carries through the router,
// holding its parts: chi's route context, the request's info and the log
// middleware's writer. The request gets it once (Server.ServeHTTP); chi
// then finds its route context there instead of adding its own, and the
// log middleware needs no context of its own: a request costs one copy of
// *http.Request, not three (pprof: the context copies were most of the
// handler's garbage, and the garbage is GC work that a bare server does
// not have).
//
// The parts are pooled, as chi pools its route context; the context is
// not. When the handler returns, the parts are detached from the context
// before they go back to the pool: a middleware that goes on
// asynchronously (a timeout handler, a goroutine logging after the
// response) and looks in the request's context then finds no parts, never
// another request's. What such code took out of the parts while the
// handler ran it must not keep.
type requestState struct {
	parent context.Context
	parts  atomic.Pointer[requestParts]
}

// requestParts are what a request's state holds while its handler runs.
type requestParts struct {
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
		if p := s.parts.Load(); p != nil {
			return &p.route
		}
		return nil // detached: chi.RouteContext is nil, URLParam ""
	case infoKey{}:
		return s
	}
	return s.parent.Value(key)
}

var requestPartsPool = sync.Pool{New: func() any { return new(requestParts) }}

// withState serves r through mux with a requestState of its own in its
// context, its parts pooled and detached once mux returns.
func withState(mux *chi.Mux, w http.ResponseWriter, r *http.Request) {
	p := requestPartsPool.Get().(*requestParts)
	p.route.Routes = mux
	st := &requestState{parent: r.Context()}
	st.parts.Store(p)
	mux.ServeHTTP(w, r.WithContext(st))
	st.parts.Store(nil)
	p.route.Reset() // keeps its slices' arrays
	p.info, p.writer = requestInfo{}, loggedWriter{}
	requestPartsPool.Put(p)
}

// partsOf is the request's parts, or nil when it came in some other way
// than through withState, or its handler has returned.
func partsOf(r *http.Request) *requestParts {
	st, _ := r.Context().Value(infoKey{}).(*requestState)
	if st == nil {
		return nil
	}
	return st.parts.Load()
}

// infoOf is the request's info; a request that carries no state gets a
// throwaway one.
func infoOf(r *http.Request) *requestInfo {
	if p := partsOf(r); p != nil {
		return &p.info
	}
	return &requestInfo{}
}
