package prom

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRegister(t *testing.T) {
	c, v := Counter("mcs_test_total", "A test counter."), GaugeVec("mcs_test_gauge", "A test gauge.", "pool")
	t.Run("nil registry", func(t *testing.T) {
		if err := Register(nil, c, v); err != nil {
			t.Fatal(err)
		}
	})
	reg := prometheus.NewPedanticRegistry()
	t.Run("registers", func(t *testing.T) {
		if err := Register(reg, c, v); err != nil {
			t.Fatal(err)
		}
		c.Inc()
		v.WithLabelValues("worker").Set(2)
		if n, err := testutil.GatherAndCount(reg, "mcs_test_total", "mcs_test_gauge"); err != nil || n != 2 {
			t.Fatalf("gathered %d series, %v; want 2", n, err)
		}
	})
	t.Run("twice", func(t *testing.T) {
		var are prometheus.AlreadyRegisteredError
		if err := Register(reg, CounterVec("mcs_other_total", "Another.", "x"), c); !errors.As(err, &are) {
			t.Fatalf("got %v, want AlreadyRegisteredError", err)
		}
	})
}
