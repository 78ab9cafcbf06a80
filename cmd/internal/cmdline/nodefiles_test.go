package cmdline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/render"
)

func TestNodeFiles(t *testing.T) {
	dir := t.TempDir()
	kc, ca := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "ca.crt")
	os.WriteFile(kc, []byte("apiVersion: v1\n"), 0o600)
	os.WriteFile(ca, []byte("PEM\n"), 0o644)
	missing := filepath.Join(dir, "none")
	for _, tc := range []struct {
		name, kubeconfig, ca string
		want                 render.NodeFiles
		err                  string
	}{
		{name: "none"},
		{name: "both", kubeconfig: kc, ca: ca, want: render.NodeFiles{Kubeconfig: []byte("apiVersion: v1\n"), KubeletCA: []byte("PEM\n")}},
		{name: "kubeconfig missing", kubeconfig: missing, ca: ca, err: "--bootstrap-kubeconfig: open " + missing},
		{name: "CA missing", kubeconfig: kc, ca: missing, err: "--kubelet-ca: open " + missing},
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
