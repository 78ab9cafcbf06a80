//go:build tools

// Package tools records the Ignition main package so `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/coreos/ignition/v2/internal"
