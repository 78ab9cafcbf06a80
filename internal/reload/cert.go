package reload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// CertPair serves the newest valid certificate pair on disk, compared by
// the content of both files (controller-runtime's certwatcher): rotating
// the files takes effect within Run's interval, without a restart, and a
// new key alone is seen too. A pair that does not load keeps the previous
// one serving, and report is told each change of outcome (the error, or
// nil once a pair loads again), so a failed rotation is not silent until
// the old certificate expires.
type CertPair struct {
	cert, key string
	w         *certwatcher.CertWatcher
	report    func(error)

	mu   sync.Mutex
	last string // the error last reported; "" while the pair loads
}

// NewCertPair loads the pair; it fails when the pair does not load.
// report (nil: nobody) is told of each change of outcome from then on.
func NewCertPair(cert, key string, report func(error)) (*CertPair, error) {
	_, err := os.Stat(cert)
	var w *certwatcher.CertWatcher
	if err == nil {
		w, err = certwatcher.New(cert, key)
	}
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s (--cert, --key): %w", cert, key, err)
	}
	return &CertPair{cert: cert, key: key, w: w, report: report}, nil
}

// GetCertificate is tls.Config's: the pair last loaded.
func (p *CertPair) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	return p.w.GetCertificate(hello)
}

// check reads the pair again and reports a change of outcome.
func (p *CertPair) check() {
	p.observe(p.w.ReadCertificate())
}

// Run checks the pair every interval until ctx ends.
func (p *CertPair) Run(ctx context.Context, every time.Duration) {
	wait.UntilWithContext(ctx, func(context.Context) { p.check() }, every)
}

// observe reports err when it differs from the last outcome reported.
func (p *CertPair) observe(err error) {
	msg := ""
	if err != nil {
		msg = fmt.Sprintf("certificate %s and key %s: %v", p.cert, p.key, err)
	}
	p.mu.Lock()
	changed := msg != p.last
	p.last = msg
	p.mu.Unlock()
	if changed && p.report != nil {
		if err != nil {
			err = errors.New(msg)
		}
		p.report(err)
	}
}

// LoadedPair is the pair cert and key as a status page shows it: read
// again when the certificate file's content changes, the last that loaded
// kept, and the error once none has.
func LoadedPair(cert, key string) func() (*tls.Certificate, error) {
	pair := &File[*tls.Certificate]{Path: cert, Parse: func([]byte) (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(cert, key)
		return &c, err
	}}
	return func() (*tls.Certificate, error) {
		c, ok, err := pair.Get()
		if !ok {
			return nil, fmt.Errorf("TLS certificate %s and key %s (--cert, --key): %w", cert, key, err)
		}
		return c, nil
	}
}
