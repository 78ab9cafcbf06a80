// Package netlimit bounds what clients on the network can hold of a server (connections, requests in flight, the time a response may take), each shared fairly between addresses.
package netlimit

import (
	"errors"
	"net"
	"net/netip"
	"time"
)

// HeaderHolder is a connection that can keep one write back and send it in
// the writev of the body written after it. net/http writes a response's
// header in a write of its own before it hands the body to the
// connection's ReadFrom; kept back, the header goes out with the body: one
// system call and one packet a response fewer. A Table's connections are
// HeaderHolders; serve finds them in a request's context.
type HeaderHolder interface {
	// HoldHeader keeps the next write back for the ReadFrom that follows.
	HoldHeader()
	// SendHeld writes what is still kept back (no body took it) and stops
	// holding.
	SendHeld() error
}

// Prefixer is a response body that can put bytes before what it has left
// to write, reporting whether it could: the header a HeaderHolder kept
// back then goes out in the body's own WriteTo, one writev.
type Prefixer interface {
	Prefix(p []byte) bool
}

// Clock is the time the limits judge by; nil means the wall clock.
type Clock interface {
	Now() time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// address is the client address a connection is counted under: its remote
// IP, IPv4-mapped addresses unmapped; the zero Addr when it has none.
func address(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	return netip.Addr{}
}

// isTimeout reports whether err is a deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
