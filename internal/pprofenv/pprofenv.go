// Package pprofenv is net/http/pprof's handlers on a mux of their own, for binaries built with -tags pprof: profiles and traces of the server under load, never in a released binary nor on the default mux.
package pprofenv

import (
	"net/http"
	"net/http/pprof"
)

// Handler serves pprof's index, profiles and traces under /debug/pprof/.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
