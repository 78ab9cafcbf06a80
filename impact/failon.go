package impact

import (
	"fmt"
	"slices"
	"strings"
)

// Conditions --fail-on takes, in the order they are reported.
var Conditions = []string{"spec-raise", "ceiling", "era-loss", "any-change"}

// ParseFailOn reads a comma list of Conditions.
func ParseFailOn(s string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !slices.Contains(Conditions, c) {
			return nil, fmt.Errorf("unknown condition %q: want a comma list of %s", c, strings.Join(Conditions, ", "))
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// hold reports whether a condition holds.
func (h Holds) hold(cond string) bool {
	switch cond {
	case "spec-raise":
		return h.SpecRaise
	case "ceiling":
		return h.Ceiling
	case "era-loss":
		return h.EraLoss
	case "any-change":
		return h.AnyChange
	}
	return false
}

// Failing lists the conditions of failOn that hold.
func (r *Report) Failing(failOn []string) []string {
	var out []string
	for _, c := range failOn {
		if r.Holds.hold(c) {
			out = append(out, c)
		}
	}
	return out
}
