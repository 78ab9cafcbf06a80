// Command rollback-reader parses Ignition configs with one Ignition release's ParseCompatibleVersion at its newest stable spec (v2.10.1: 3.2; v2.19.0, built with -tags ignition_v2_19: 3.4), as the operator of a release rolled back to does.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// version is the Ignition release whose config package this links: the
// go.mod it is built with pins it, and the build sets it to match.
var version = "v2.10.1"

type result struct {
	File  string `json:"file"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Config is the config as this release read it (its newest spec's
	// types, encoding/json), so a caller can compare it field by field.
	Config any `json:"config,omitempty"`
}

// Each argument is a file holding one Ignition config; one JSON line per
// file says whether it parsed, and what it read. The exit status is 0 when every file was
// read, whatever the verdicts: the caller judges them.
func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("rollback-reader: github.com/coreos/ignition/v2 " + version + " v" + spec + " ParseCompatibleVersion")
		return
	}
	enc := json.NewEncoder(os.Stdout)
	for _, f := range os.Args[1:] {
		raw, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rollback-reader:", err)
			os.Exit(1)
		}
		r := result{File: f, OK: true}
		cfg, rpt, err := read(raw)
		if err != nil {
			r.OK, r.Error = false, err.Error()
			if s := rpt.String(); s != "" {
				r.Error += ": " + s
			}
		} else {
			r.Config = cfg
		}
		if err := enc.Encode(r); err != nil {
			os.Exit(1)
		}
	}
}
