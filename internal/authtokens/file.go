package authtokens

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"

	"k8s.io/utils/clock"

	"github.com/ignition-mcs/mcs/internal/reload"
	"github.com/ignition-mcs/mcs/serve"
)

// fileMax bounds a token file: a token a line, thousands of them fit.
const fileMax = 1 << 20

// errLoose is a token file others than its owner (and group) may read or
// change.
var errLoose = errors.New("readable or writable by others")

// File is the tokens of a token file (see parse), read now (an error if
// it does not parse) and again, at most every second on clk (nil: the
// wall clock), whenever its content changes; a file that stops parsing
// keeps the tokens last read, and says why in the log. Only a regular
// file is opened (a FIFO would hang every request that checks a token);
// one that others may read or write is refused (the tokens are every
// node's credentials), one its group may read is warned about once.
func File(path string, clk clock.PassiveClock, log *slog.Logger) (func() []serve.Token, error) {
	warned := false // reload.File calls Perm under its lock
	perm := func(m fs.FileMode) error {
		if m&0o027 != 0 {
			return fmt.Errorf("%w (mode %04o): chmod 600 it (a Secret's volume: defaultMode: 0400)", errLoose, m)
		}
		if m&0o040 != 0 && !warned {
			warned = true
			log.Warn("the auth token file is readable by its group; 0600 keeps the tokens to mcs alone", "file", path, "mode", fmt.Sprintf("%04o", m))
		}
		return nil
	}
	tf := &reload.File[[]serve.Token]{Path: path, Parse: parse, Clock: clk, Max: fileMax, Perm: perm}
	if _, _, err := tf.Get(); err != nil {
		return nil, err
	}
	// Told once per change of outcome: Get runs on every request.
	var mu sync.Mutex
	last := ""
	return func() []serve.Token {
		t, _, err := tf.Get()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		mu.Lock()
		changed := msg != last
		last = msg
		mu.Unlock()
		switch {
		case changed && err != nil:
			log.Error("reading auth tokens; keeping the previous ones", "err", err)
		case changed:
			log.Info("auth tokens read again", "file", path)
		}
		return t
	}, nil
}
