package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ReadFile reads a regular file (through a link too) within its limit and
// never opens a FIFO, a directory or a device; over the limit it fails.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	reg, fifo, link := filepath.Join(dir, "f"), filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
	os.WriteFile(reg, []byte("0123456789"), 0o600)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, link)
	if b, info, err := ReadFile(reg, 10); err != nil || string(b) != "0123456789" || info.Mode().Perm() != 0o600 {
		t.Errorf("a regular file: %q %v", b, err)
	}
	if _, _, err := ReadFile(reg, 9); !errors.Is(err, errTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	for p, want := range map[string]string{fifo: "a named pipe (FIFO)", link: "a named pipe (FIFO)", dir: "a directory", "/dev/zero": "a character device"} {
		if _, _, err := ReadFile(p, 10); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", p, err)
		}
	}
}
