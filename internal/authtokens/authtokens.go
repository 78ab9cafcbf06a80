// Package authtokens reads the bearer tokens a server takes from a token file and joins them with the pool tokens a cluster's Secrets hold.
package authtokens

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ignition-mcs/mcs/pki"
	"github.com/ignition-mcs/mcs/serve"
)

// parse reads a token file (mcs's --auth-token-file): a token a line, then the pools it
// may fetch, separated by blanks; a token without pools fetches every pool
// and reads /status and /metrics. # starts a comment line.
func parse(b []byte) ([]serve.Token, error) {
	var out []serve.Token
	for i, line := range bytes.Split(b, []byte("\n")) {
		fields := strings.Fields(string(line))
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		for _, p := range fields[1:] {
			if !validPool(p) {
				return nil, fmt.Errorf("line %d: %q is not a pool name", i+1, p)
			}
		}
		if bits := serve.TokenBits([]byte(fields[0])); bits < serve.MinTokenBits {
			return nil, fmt.Errorf("line %d: the token has about %.0f bits of entropy, want at least %d: a guesser could find it (make one with `openssl rand -base64 24`)", i+1, bits, serve.MinTokenBits)
		}
		out = append(out, serve.Token{Secret: []byte(fields[0]), Pools: fields[1:]})
	}
	if len(out) == 0 {
		return nil, errors.New("no tokens in file")
	}
	return out, nil
}

// validPool is a Kubernetes object name as a pool has: a typo such as a
// comma-separated list fails loudly instead of scoping a token to nothing.
func validPool(p string) bool {
	if p == "" || len(p) > 253 {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// Join is the file's tokens then the pool tokens, one slice until
// either's content changes: the file's tokens are keyed by what they hold
// (contentKey), the pool tokens by the watch's generation, which changes
// whenever they do.
func Join(file func() []serve.Token, w *pki.TokenWatch) func() []serve.Token {
	type key struct {
		file [sha256.Size]byte
		gen  uint64
	}
	var mu sync.Mutex
	var last key
	var joined []serve.Token
	return func() []serve.Token {
		f := file()
		k := key{file: contentKey(f), gen: w.Generation()}
		mu.Lock()
		defer mu.Unlock()
		if joined != nil && k == last {
			return joined
		}
		out := append([]serve.Token{}, f...)
		for _, t := range w.Tokens() {
			out = append(out, serve.Token{Secret: []byte(t.Token), Pools: []string{t.Pool}})
		}
		joined, last = out, k
		return joined
	}
}

// contentKey hashes tokens' secrets and pools (their JSON, which cannot
// run two fields together).
func contentKey(tokens []serve.Token) [sha256.Size]byte {
	b, _ := json.Marshal(tokens) // of []byte and []string: cannot fail
	return sha256.Sum256(b)
}
