package serve

import (
	"context"
	"net"
	"net/http"

	"github.com/ignition-mcs/mcs/netlimit"
)

// A connection that is a netlimit.HeaderHolder sends a response's header
// in the writev of its body: one system call and one packet a response
// fewer, where a bare server writing one contiguous body makes two (perf:
// the header's own write was ~1.8 µs of user time a response, and a wakeup
// of the client).

type connKey struct{}

// ConnContext is an http.Server's ConnContext: a connection that can hold
// a header back is kept in its requests' context, where writeBody finds
// it. TLS connections cannot (the header is encrypted in a record of its
// own), and get nothing.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if _, ok := c.(netlimit.HeaderHolder); !ok {
		return ctx
	}
	return context.WithValue(ctx, connKey{}, c)
}

// holderOf is r's connection when it can hold a header back, else nil.
func holderOf(r *http.Request) netlimit.HeaderHolder {
	h, _ := r.Context().Value(connKey{}).(netlimit.HeaderHolder)
	return h
}
