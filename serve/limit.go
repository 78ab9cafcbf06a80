package serve

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/ignition-mcs/mcs/netlimit"
	"github.com/ignition-mcs/mcs/serve/status"
)

// limit answers 503 (Ignition retries) once max config requests are being
// answered, or once the request's address holds its fair share of them
// (netlimit.Slots): bodies come from memory, so only slow readers pile up,
// and a bound keeps them from taking every goroutine and socket, a share
// keeps a few addresses from taking every slot. Never 429: most Ignition
// platforms treat it as fatal. A max of zero or less is no bound.
func limit(max int, ref *refuser) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if max <= 0 {
			return next
		}
		slots := netlimit.NewSlots(max)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			addr := remoteAddr(r)
			ok, share, full := slots.Take(addr)
			if ok {
				defer slots.Release(addr)
				next.ServeHTTP(w, r)
				return
			}
			if full {
				ref.refuse(w, r, status.CauseOverloaded, "-", fmt.Sprintf("overloaded: %d config requests in flight", max))
				return
			}
			ref.refuse(w, r, status.CauseOverloaded, "-", fmt.Sprintf("overloaded: this address has %d config requests in flight, its share of %d", share, max))
		})
	}
}

// remoteAddr is the request's client address, the zero Addr when it has
// none (a test's request).
func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
