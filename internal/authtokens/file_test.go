package authtokens

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
