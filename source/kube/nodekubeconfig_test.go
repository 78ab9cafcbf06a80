package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The kubeconfig is upstream's kubeconfigFromSecret's, byte for byte (its
// YAML read off the MCO's code at 7ff337a: clientcmd v1 of client-go
// v0.36, whose preferences are omitzero, through ghodss/yaml).
func TestNodeKubeconfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "token"), []byte("tok\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("SA-CA"), 0o600)
	const want = `clusters:
- cluster:
    certificate-authority-data: %s
    server: https://api-int.c.example.com:6443
  name: local
contexts:
- context:
    cluster: local
    user: kubelet
  name: kubelet
current-context: kubelet
users:
- name: kubelet
  user:
    token: tok
`
	for name, tc := range map[string]struct {
		ca   []byte
		want string
	}{
		"kubeconfig-data": {[]byte("API-CA"), "QVBJLUNB"},
		"the token's CA":  {nil, "U0EtQ0E="},
	} {
		got, err := NodeKubeconfig(dir, "https://api-int.c.example.com:6443", tc.ca)
		if err != nil {
			t.Fatal(err)
		}
		if w := fmt.Sprintf(want, tc.want); string(got) != w {
			t.Errorf("%s:\n%s\nwant\n%s", name, got, w)
		}
	}
	os.Remove(filepath.Join(dir, "ca.crt"))
	if _, err := NodeKubeconfig(dir, "u", nil); err == nil {
		t.Error("no CA anywhere: no error")
	}
}
