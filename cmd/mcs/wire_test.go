package main

import (
	"testing"

	"github.com/ignition-mcs/mcs/serve"
)

// The token file's key is its content: equal tokens in another slice key
// the same, a rotated secret or a changed pool list does not.
func TestTokensKey(t *testing.T) {
	a := []serve.Token{{Secret: []byte("s1"), Pools: []string{"worker"}}}
	b := []serve.Token{{Secret: []byte("s1"), Pools: []string{"worker"}}}
	if tokensKey(a) != tokensKey(b) {
		t.Error("equal tokens in two slices key apart")
	}
	for name, c := range map[string][]serve.Token{
		"secret": {{Secret: []byte("s2"), Pools: []string{"worker"}}},
		"pools":  {{Secret: []byte("s1"), Pools: []string{"worker", "infra"}}},
		"added":  append(b, serve.Token{Secret: []byte("s3")}),
	} {
		if tokensKey(a) == tokensKey(c) {
			t.Errorf("%s changed: same key", name)
		}
	}
}
