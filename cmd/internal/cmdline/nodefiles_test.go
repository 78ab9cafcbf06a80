package cmdline

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ignition-mcs/mcs/render"
)

func TestNodeFiles(t *testing.T) {
	dir := t.TempDir()
	kc, ca := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "ca.crt")
	os.WriteFile(kc, []byte("apiVersion: v1\n"), 0o600)
	os.WriteFile(ca, []byte("PEM\n"), 0o644)
	missing, fifo := filepath.Join(dir, "none"), filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kubeconfig, ca string
		want                 render.NodeFiles
		err                  string
	}{
		{name: "none"},
		{name: "both", kubeconfig: kc, ca: ca, want: render.NodeFiles{Kubeconfig: []byte("apiVersion: v1\n"), KubeletCA: []byte("PEM\n")}},
		{name: "kubeconfig missing", kubeconfig: missing, ca: ca, err: "--bootstrap-kubeconfig: stat " + missing},
		{name: "CA missing", kubeconfig: kc, ca: missing, err: "--kubelet-ca: stat " + missing},
		{name: "CA a FIFO", kubeconfig: kc, ca: fifo, err: "--kubelet-ca: " + fifo + ": not a regular file: a named pipe (FIFO), so never opened"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NodeFiles(tc.kubeconfig, tc.ca)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got.Kubeconfig) != string(tc.want.Kubeconfig) || string(got.KubeletCA) != string(tc.want.KubeletCA) {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}
