package pki

import "context"

// Start runs a Manager of cfg (see run) until ctx ends or stop is called;
// stop waits for it to end.
func Start(ctx context.Context, cfg Config) (stop func(), err error) {
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.run(ctx) }()
	return func() { cancel(); <-done }, nil
}
