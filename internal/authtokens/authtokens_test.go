package authtokens

import (
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/serve"
)

// --auth-token-file: TOKEN [POOL…], comments and blank lines skipped; a
// pool list that is not pool names is an error naming the line.
func TestParseTokens(t *testing.T) {
	got, err := Parse([]byte("# admins\nall-pools\n\nworker-tok worker\nboth master  arbiter\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []serve.Token{{Secret: []byte("all-pools"), Pools: []string{}}, {Secret: []byte("worker-tok"), Pools: []string{"worker"}}, {Secret: []byte("both"), Pools: []string{"master", "arbiter"}}}
	if len(got) != len(want) {
		t.Fatalf("%d tokens", len(got))
	}
	for i := range want {
		if string(got[i].Secret) != string(want[i].Secret) || strings.Join(got[i].Pools, ",") != strings.Join(want[i].Pools, ",") {
			t.Errorf("line %d: %+v", i, got[i])
		}
	}
	for name, in := range map[string]string{"comma list": "tok worker,master\n", "no tokens": "# none\n"} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(in)); err == nil {
				t.Errorf("%q accepted", in)
			}
		})
	}
	if _, err := Parse([]byte("tok worker,master\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("error does not name the line: %v", err)
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
