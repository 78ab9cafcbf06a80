//go:build pprof

package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// A binary built with -tags pprof serves net/http/pprof on the loopback
// address in MCS_PPROF (hack/loadtest's PROFILE=1): profiles and traces of
// the server under load, never in a released binary.
func init() {
	addr := os.Getenv("MCS_PPROF")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcs: MCS_PPROF:", err)
		os.Exit(2)
	}
	go http.Serve(ln, nil)
}
