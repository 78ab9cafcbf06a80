package testkit

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestTable(t *testing.T) {
	var seen []string
	upper := func(s string) string { seen = append(seen, s); return strings.ToUpper(s) }
	Table(t, "upper", upper, map[string]string{"b": "B", "": "", "a": "A"})
	if got := strings.Join(seen, ","); got != ",a,b" {
		t.Errorf("cases run: %q, want every input once, in order", got)
	}
}

func TestCheck(t *testing.T) {
	if msg := check("upper", strings.ToUpper, "a", "A"); msg != "" {
		t.Errorf("a matching case reported %q", msg)
	}
	if msg, want := check("upper", strings.ToUpper, "a", "a"), `upper("a") = "A", want "a"`; msg != want {
		t.Errorf("a wrong case reported %q, want %q", msg, want)
	}
}

func TestEvery(t *testing.T) {
	var n, after atomic.Int64
	stop := Every(t, time.Millisecond, func(i int) {
		if int64(i) != n.Add(1) {
			t.Errorf("call %d out of order", i)
		}
	})
	for n.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	stop()
	after.Store(n.Load())
	time.Sleep(10 * time.Millisecond)
	if n.Load() != after.Load() {
		t.Errorf("f called after stop returned: %d then %d", after.Load(), n.Load())
	}
	stop() // a second stop, and the Cleanup's, are no-ops
}
