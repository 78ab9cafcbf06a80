package authtokens

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// File reads the tokens at once, refusing a file that does not parse, and
// keeps the last good ones when a new content does not parse.
func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := File(path, nil, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("no file: no error")
	}
	write("Zq8vR2mXk4LpT7wYc1NbH6sJd9FgA3eU worker\n")
	var logged bytes.Buffer
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	tokens, err := File(path, clk, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	first := tokens()
	if len(first) != 1 {
		t.Fatalf("tokens %+v", first)
	}
	write("bad-token worker/../x\n")
	clk.SetTime(clk.Now().Add(time.Second))
	if got := tokens(); len(got) != 1 || !strings.Contains(logged.String(), "keeping the previous ones") {
		t.Errorf("a bad file: %+v, logged %q", got, logged.String())
	}
}

// A token file is opened only when regular: a symlink to a FIFO (which
// would hang every request that checks a token) is refused at start and,
// swapped in later, keeps the tokens read before without blocking. A file
// others may read or write is refused; one its group may read is warned
// about; a bad file is logged once, not at every request.
func TestFileRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, path); err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	if _, err := File(path, nil, discard); err == nil || !strings.Contains(err.Error(), "a named pipe (FIFO), so never opened") {
		t.Fatalf("a symlink to a FIFO: %v", err)
	}
	os.Remove(path)
	const tok = "Zq8vR2mXk4LpT7wYc1NbH6sJd9FgA3eU worker\n"
	for mode, want := range map[os.FileMode]string{0o644: "readable or writable by others (mode 0644): chmod 600", 0o602: "mode 0602", 0o620: "mode 0620"} {
		os.WriteFile(path, []byte(tok), 0o600)
		os.Chmod(path, mode)
		if _, err := File(path, nil, discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	os.Chmod(path, 0o640)
	var logged bytes.Buffer
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	tokens, err := File(path, clk, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil || !strings.Contains(logged.String(), "readable by its group") {
		t.Fatalf("mode 0640: %v, logged %q", err, logged.String())
	}
	os.Remove(path)
	os.Symlink(fifo, path)
	for range 3 {
		clk.SetTime(clk.Now().Add(time.Second))
		if got := tokens(); len(got) != 1 {
			t.Fatalf("a FIFO swapped in: tokens %+v", got)
		}
	}
	if n := strings.Count(logged.String(), "keeping the previous ones"); n != 1 || !strings.Contains(logged.String(), "named pipe") {
		t.Errorf("the FIFO logged %d times: %q", n, logged.String())
	}
}
