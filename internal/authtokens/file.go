package authtokens

import (
	"log/slog"

	"k8s.io/utils/clock"

	"github.com/ignition-mcs/mcs/internal/reload"
	"github.com/ignition-mcs/mcs/serve"
)

// File is the tokens of a token file (see parse), read now (an error if
// it does not parse) and again, at most every second on clk (nil: the
// wall clock), whenever its content changes; a file that stops parsing
// keeps the tokens last read, and says why in the log.
func File(path string, clk clock.PassiveClock, log *slog.Logger) (func() []serve.Token, error) {
	tf := &reload.File[[]serve.Token]{Path: path, Parse: parse, Clock: clk}
	if _, _, err := tf.Get(); err != nil {
		return nil, err
	}
	return func() []serve.Token {
		t, _, err := tf.Get()
		if err != nil {
			log.Error("reading auth tokens; keeping the previous ones", "err", err)
		}
		return t
	}, nil
}
