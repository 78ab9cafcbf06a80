package kube

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckAPIServerURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want error
	}{
		{"https://api-int.c.example.com:6443", nil},
		{"https://10.0.0.1:6443", nil},
		{"http://api-int.c.example.com:6443", errNotHTTPS},
		{"https://:6443", errNotHTTPS},
		{"https://api-int.CLUSTER.DOMAIN:6443", ErrPlaceholder},
		{"https://api-int.<cluster>:6443", ErrPlaceholder},
		{"https://api-int.X-HOST.example.com:6443", ErrPlaceholder},
	} {
		t.Run(tc.url, func(t *testing.T) {
			if err := CheckAPIServerURL(tc.url); !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	if err := CheckAPIServerURL("https://h:6443/%zz"); err == nil {
		t.Error("an unparsable URL accepted")
	}
}

func TestCheckTokenDir(t *testing.T) {
	dir := t.TempDir()
	if err := CheckTokenDir(dir); err == nil || err.Error() != "token: no such file or directory" {
		t.Errorf("empty: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckTokenDir(dir); err == nil || err.Error() != "ca.crt: no such file or directory" {
		t.Errorf("no ca.crt: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("c"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckTokenDir(dir); err != nil {
		t.Errorf("both: %v", err)
	}
}
