package testkit

import (
	"net"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// ReservedAddr binds a loopback port without listening on it: connections
// to the address are refused, as to a server that is down, and no other
// process can take the port, until listen is called and returns the
// listener there. Unlike picking a free port and listening later, nothing
// can race for it meanwhile.
func ReservedAddr(tb testing.TB) (addr string, listen func() net.Listener) {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "reserved port")
	tb.Cleanup(func() { f.Close() })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
	return addr, func() net.Listener {
		tb.Helper()
		if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
			tb.Fatal(err)
		}
		ln, err := net.FileListener(f) // a copy of the descriptor
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { ln.Close() })
		return ln
	}
}
