//go:build pprof

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/ignition-mcs/mcs/internal/pprofenv"
)

// A binary built with -tags pprof serves pprof on the loopback address in
// MCS_PPROF (hack/loadtest's PROFILE=1).
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
	go http.Serve(ln, pprofenv.Handler())
}
