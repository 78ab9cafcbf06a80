package convert

import (
	"errors"
	"testing"
)

// TestBeside: the waiter gets f's result, and f's panic, as if f had run
// in its goroutine.
func TestBeside(t *testing.T) {
	if got := beside(func() int { return 7 })(); got != 7 {
		t.Fatalf("got %d", got)
	}
	boom := errors.New("boom")
	wait := beside(func() bool { panic(boom) })
	defer func() {
		if p := recover(); p != boom {
			t.Fatalf("recovered %v, want the goroutine's panic", p)
		}
	}()
	wait()
	t.Fatal("no panic in the waiter")
}
