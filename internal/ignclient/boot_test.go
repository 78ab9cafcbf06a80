package ignclient

import (
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	long := strings.Repeat("a", logTail) + "the failing stage"
	for _, c := range []struct {
		name string
		r    *Result
		want string
	}{
		{"no run", nil, ""},
		{"short log", &Result{Log: "fetch ok"}, "fetch ok"},
		{"long log", &Result{Log: long}, long[len(long)-logTail:]},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Tail(); got != c.want {
				t.Errorf("Tail() = %.40q… (%d bytes), want %d bytes", got, len(got), len(c.want))
			}
		})
	}
}
