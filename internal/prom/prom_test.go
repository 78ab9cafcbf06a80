package prom

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWith(t *testing.T) {
	counter := prometheus.CounterOpts{Name: "mcs_test_total", Help: "A test counter."}
	gauge := prometheus.GaugeOpts{Name: "mcs_test_gauge", Help: "A test gauge."}
	t.Run("nil registry", func(t *testing.T) {
		f, registered := With(nil)
		f.NewCounter(counter).Inc()
		if err := registered(); err != nil {
			t.Fatal(err)
		}
	})
	reg := prometheus.NewPedanticRegistry()
	t.Run("registers", func(t *testing.T) {
		f, registered := With(reg)
		f.NewCounter(counter).Inc()
		f.NewGaugeVec(gauge, []string{"pool"}).WithLabelValues("worker").Set(2)
		if err := registered(); err != nil {
			t.Fatal(err)
		}
		if n, err := testutil.GatherAndCount(reg, "mcs_test_total", "mcs_test_gauge"); err != nil || n != 2 {
			t.Fatalf("gathered %d series, %v; want 2", n, err)
		}
	})
	t.Run("twice", func(t *testing.T) {
		f, registered := With(reg)
		c := f.NewCounterVec(prometheus.CounterOpts{Name: "mcs_other_total", Help: "Another."}, []string{"x"})
		f.NewCounter(counter) // refused: no panic, the first refusal kept
		f.NewGauge(gauge)
		var are prometheus.AlreadyRegisteredError
		if err := registered(); !errors.As(err, &are) || are.ExistingCollector == nil {
			t.Fatalf("got %v, want AlreadyRegisteredError", err)
		}
		c.WithLabelValues("y").Inc() // what was registered still counts
		if n, err := testutil.GatherAndCount(reg, "mcs_other_total"); err != nil || n != 1 {
			t.Fatalf("gathered %d series, %v; want 1", n, err)
		}
	})
}
