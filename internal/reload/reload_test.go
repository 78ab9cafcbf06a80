package reload

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ignition-mcs/mcs/internal/testpki"
)

// A file is read again once Every has passed on its clock, parsed again
// only when its content changed, and its last good value kept, with the
// error, while it does not parse.
func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	parses := 0
	f := &File[int]{Path: path, Every: time.Second, Clock: clk, Parse: func(b []byte) (int, error) {
		parses++
		return strconv.Atoi(string(b))
	}}
	if _, ok, err := f.Get(); ok || err == nil {
		t.Fatalf("no file: ok %v, err %v", ok, err)
	}
	write("1")
	if v, ok, err := f.Get(); !ok || err != nil || v != 1 {
		t.Fatalf("got %d %v %v, want 1", v, ok, err)
	}
	write("2")
	if v, _, _ := f.Get(); v != 1 {
		t.Errorf("read again within Every: %d", v)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if v, _, err := f.Get(); v != 2 || err != nil {
		t.Errorf("after Every: %d %v, want 2", v, err)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	f.Get()
	if parses != 2 {
		t.Errorf("%d parses, want 2: the same content is not parsed again", parses)
	}
	write("two")
	clk.SetTime(clk.Now().Add(time.Second))
	if v, ok, err := f.Get(); v != 2 || !ok || err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("bad content: %d %v %v, want 2 kept and an error naming the file", v, ok, err)
	}
	if _, _, err := f.Get(); err == nil {
		t.Error("within Every, the error is forgotten")
	}
}

// The pair is compared by the content of both files: a new key alone is
// seen (it does not match: reported, the old pair serving on), and the
// matching certificate then serves, the recovery reported.
func TestCertPair(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	install := func(name string, b []byte) {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ca := testpki.NewCA(t)
	a, b := ca.Serving(t), ca.Serving(t)
	install(certFile, a.CertPEM)
	install(keyFile, a.KeyPEM)
	var mu sync.Mutex
	var reports []error
	p, err := NewCertPair(certFile, keyFile, func(err error) { mu.Lock(); reports = append(reports, err); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	serving := func() []byte {
		c, err := p.GetCertificate(nil)
		if err != nil || c == nil {
			t.Fatalf("no certificate: %v", err)
		}
		return c.Certificate[0]
	}
	first := serving()
	install(keyFile, b.KeyPEM)
	p.check()
	if string(serving()) != string(first) {
		t.Error("a pair that does not match replaced the one serving")
	}
	install(certFile, b.CertPEM)
	p.check()
	if string(serving()) == string(first) {
		t.Error("the new pair does not serve")
	}
	p.check() // no change: nothing reported
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 2 || reports[0] == nil || !strings.Contains(reports[0].Error(), keyFile) || reports[1] != nil {
		t.Errorf("reports %v, want the mismatch naming the files, then the recovery", reports)
	}
}

// A pair that does not load at start is an error naming the flags.
func TestCertPairMissing(t *testing.T) {
	_, err := NewCertPair("/nonexistent/tls.crt", "/nonexistent/tls.key", nil)
	var pe *os.PathError
	if err == nil || !strings.Contains(err.Error(), "--cert, --key") || !errors.As(err, &pe) {
		t.Errorf("err %v", err)
	}
}
