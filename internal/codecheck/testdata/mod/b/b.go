// Package b uses a.
package b

import (
	"fmt"

	"example.com/mod/a"
)

// B is b's one function; it reaches a.Result.String only through fmt.Stringer.
func B() string { return fmt.Sprint(a.Used()) }
