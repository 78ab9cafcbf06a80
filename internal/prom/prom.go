// Package prom gives mcs's packages client_golang's promauto factory on the registry each is given, returning a refused registration instead of panicking.
package prom

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// With is promauto.With(reg), except that a collector reg refuses (a name
// registered twice, say) is not a panic: registered reports the first
// refusal, for the constructor to return. A nil reg registers nothing, as
// promauto.With(nil): the collectors still count, for tests and for
// components whose metrics another registers.
func With(reg prometheus.Registerer) (f promauto.Factory, registered func() error) {
	if reg == nil {
		return promauto.With(nil), func() error { return nil }
	}
	k := &keeper{Registerer: reg}
	return promauto.With(k), func() error { return k.err }
}

// keeper keeps the first error of MustRegister instead of panicking.
type keeper struct {
	prometheus.Registerer
	err error
}

func (k *keeper) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := k.Register(c); err != nil && k.err == nil {
			k.err = fmt.Errorf("registering metrics: %w", err)
		}
	}
}
