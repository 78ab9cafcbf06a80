package status

import (
	"crypto/tls"
	"sync"
	"time"

	"github.com/ignition-mcs/mcs/source"
)

// certificateState is the serving certificate's newest reload, for
// /status: a failed one keeps the previous pair serving, which nothing
// else shows until it expires.
type certificateState struct {
	// served is the pair the TLS listener serves; nil: no TLS listener.
	served func() (*tls.Certificate, error)

	mu      sync.Mutex
	on      bool // a certificate is reloaded at all (TLS is on)
	message string
	since   time.Time
}

// CertificateReload records the outcome of the newest reload of the TLS
// serving certificate: nil when the pair on disk is the one served. A
// failure (its message names the files) becomes the CertificateReloadFailed
// condition of /status and a CertificateReloadFailed notice on every pool
// (Events with --source kube: every node fetching over TLS is concerned).
func (rec *Recorder) CertificateReload(err error) {
	if !rec.cert.record(err) {
		return
	}
	if snap := rec.served(); snap != nil {
		for _, pool := range snap.Names() {
			rec.tell(source.Notice{Kind: source.NoticeCertificateReloadFailed, Pool: pool,
				Message: "the TLS serving certificate was not reloaded; the previous one is served until it expires: " + err.Error()})
		}
	}
}

// record notes a reload's outcome; true when it is a new failure, one to
// tell the pools of.
func (c *certificateState) record(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.message
	c.on = true
	switch {
	case err == nil:
		c.message, c.since = "", time.Time{}
	case err.Error() != was:
		c.message, c.since = err.Error(), time.Now()
	}
	return err != nil && err.Error() != was
}

// condition appends /status's CertificateReloadFailed condition to cs
// when TLS is on.
func (c *certificateState) condition(cs []Condition) []Condition {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return cs
	}
	cond := Condition{Type: "CertificateReloadFailed", Status: "False", Reason: "CertificateLoaded", Message: "the TLS serving certificate on disk is the one served"}
	if c.message != "" {
		cond.Status, cond.Reason = "True", "PairRefused"
		cond.Message = "since " + c.since.UTC().Format(time.RFC3339) + " the previous certificate is served: " + c.message
	}
	return append(cs, cond)
}
