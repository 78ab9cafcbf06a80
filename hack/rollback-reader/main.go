// Command rollback-reader parses Ignition configs with the config package of one Ignition release (v2.10.1, newest stable spec 3.2; or v2.19.0, newest 3.4), as the operator of a release rolled back to would.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/coreos/ignition/v2/config"
)

// version is the Ignition release whose config package this links: the
// go.mod it is built with pins it, and the build sets it to match.
var version = "v2.10.1"

type result struct {
	File  string `json:"file"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Each argument is a file holding one Ignition config; one JSON line per
// file says whether it parsed. The exit status is 0 when every file was
// read, whatever the verdicts: the caller judges them.
func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("rollback-reader: github.com/coreos/ignition/v2 " + version + " config.Parse")
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
		if _, rpt, err := config.Parse(raw); err != nil {
			r.OK, r.Error = false, err.Error()
			if s := rpt.String(); s != "" {
				r.Error += ": " + s
			}
		}
		if err := enc.Encode(r); err != nil {
			os.Exit(1)
		}
	}
}
