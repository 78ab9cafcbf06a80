// Command codestats prints the shape of a Go tree: packages, files, exported identifiers and methods per type.
//
// Usage: codestats DIR. The figures are codecheck.Stats's, the ones
// TestMethodsPerType checks. Another commit's: `git archive REV | tar -x -C
// DIR`, then codestats DIR.
package main

import (
	"fmt"
	"os"

	"github.com/ignition-mcs/mcs/internal/codecheck"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: codestats DIR")
		os.Exit(2)
	}
	st, err := codecheck.Measure(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "codestats:", err)
		os.Exit(1)
	}
	fmt.Print(st)
}
