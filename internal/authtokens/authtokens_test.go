package authtokens

import (
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/serve"
)

// Tokens of the tests, 128 bits and more.
const (
	allPools  = "all-pools-Tn4Bx7Qe1Uh5Za8S"
	workerTok = "worker-tok-Lm3Vc6Ry9Fk2Wp5D"
	bothTok   = "both-Ej8Hs1Nq4Xt7Gb3Kv6"
)

// --auth-token-file: TOKEN [POOL…], comments and blank lines skipped; a
// pool list that is not pool names, or a token under 128 bits, is an error
// naming the line.
func TestParseTokens(t *testing.T) {
	got, err := parse([]byte("# admins\n" + allPools + "\n\n" + workerTok + " worker\n" + bothTok + " master  arbiter\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []serve.Token{{Secret: []byte(allPools), Pools: []string{}}, {Secret: []byte(workerTok), Pools: []string{"worker"}}, {Secret: []byte(bothTok), Pools: []string{"master", "arbiter"}}}
	if len(got) != len(want) {
		t.Fatalf("%d tokens", len(got))
	}
	for i := range want {
		if string(got[i].Secret) != string(want[i].Secret) || strings.Join(got[i].Pools, ",") != strings.Join(want[i].Pools, ",") {
			t.Errorf("line %d: %+v", i, got[i])
		}
	}
	for name, in := range map[string]string{"comma list": workerTok + " worker,master\n", "no tokens": "# none\n",
		"one character": "x\n", "16 hex digits": "0123456789abcdef0123456789abcde\n", "a word": "s3cret worker\n"} {
		t.Run(name, func(t *testing.T) {
			if _, err := parse([]byte(in)); err == nil {
				t.Errorf("%q accepted", in)
			}
		})
	}
	if _, err := parse([]byte(workerTok + " worker,master\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("error does not name the line: %v", err)
	}
	if _, err := parse([]byte("# short\n" + allPools + "\nhunter2 worker\n")); err == nil || !strings.Contains(err.Error(), "line 3: the token has about 36 bits of entropy, want at least 128") {
		t.Errorf("a short token: %v", err)
	}
}

// The token file's key is its content: equal tokens in another slice key
// the same, a rotated secret or a changed pool list does not.
func TestTokensKey(t *testing.T) {
	a := []serve.Token{{Secret: []byte("s1"), Pools: []string{"worker"}}}
	b := []serve.Token{{Secret: []byte("s1"), Pools: []string{"worker"}}}
	if contentKey(a) != contentKey(b) {
		t.Error("equal tokens in two slices key apart")
	}
	for name, c := range map[string][]serve.Token{
		"secret": {{Secret: []byte("s2"), Pools: []string{"worker"}}},
		"pools":  {{Secret: []byte("s1"), Pools: []string{"worker", "infra"}}},
		"added":  append(b, serve.Token{Secret: []byte("s3")}),
	} {
		if contentKey(a) == contentKey(c) {
			t.Errorf("%s changed: same key", name)
		}
	}
}
