package stored

import (
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// A Ceiling is unknown until Set, and asks the watch it follows for a pass
// only when the ceiling changes.
func TestCeilingSetRefreshesOnChange(t *testing.T) {
	var c Ceiling
	if _, known := c.Get(); known {
		t.Fatal("known before Set")
	}
	c.Set(convert.Version{Major: 3, Minor: 4}) // no watch yet: nothing to ask
	w := &Watch{kick: make(chan struct{}, 1)}
	c.Follow(w)
	kicked := func() bool {
		select {
		case <-w.kick:
			return true
		default:
			return false
		}
	}
	for _, step := range []struct {
		name string
		v    convert.Version
		kick bool
	}{
		{"same", convert.Version{Major: 3, Minor: 4}, false},
		{"lower", convert.Version{Major: 3, Minor: 2}, true},
		{"none", convert.Version{}, true},
		{"none again", convert.Version{}, false},
	} {
		c.Set(step.v)
		if got := kicked(); got != step.kick {
			t.Errorf("%s: refreshed %v, want %v", step.name, got, step.kick)
		}
		if v, known := c.Get(); !known || v != step.v {
			t.Errorf("%s: Get = %v %v", step.name, v, known)
		}
	}
}
