package serve

import (
	"time"

	"github.com/ignition-mcs/mcs/source"
)

// certificateState is the serving certificate's newest reload, for
// /status: a failed one keeps the previous pair serving, which nothing
// else shows until it expires.
type certificateState struct {
	on      bool // a certificate is reloaded at all (TLS is on)
	message string
	since   time.Time
}

// CertificateReload records the outcome of the newest reload of the TLS
// serving certificate: nil when the pair on disk is the one served. A
// failure (its message names the files) becomes the CertificateReloadFailed
// condition of /status and a CertificateReloadFailed notice on every pool
// (Events with --source kube: every node fetching over TLS is concerned).
func (s *Server) CertificateReload(err error) {
	rec := s.rec
	rec.mu.Lock()
	was := rec.cert.message
	rec.cert.on = true
	switch {
	case err == nil:
		rec.cert.message, rec.cert.since = "", time.Time{}
	case err.Error() != was:
		rec.cert.message, rec.cert.since = err.Error(), time.Now()
	}
	rec.mu.Unlock()
	if err == nil || err.Error() == was {
		return
	}
	if snap := s.snap.Load(); snap != nil {
		for _, pool := range snap.names {
			rec.tell(source.Notice{Kind: source.NoticeCertificateReloadFailed, Pool: pool,
				Message: "the TLS serving certificate was not reloaded; the previous one is served until it expires: " + err.Error()})
		}
	}
}

// certificateCondition appends /status's CertificateReloadFailed
// condition to cs when TLS is on.
func (rec *recorder) certificateCondition(cs []Condition) []Condition {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.cert.on {
		return cs
	}
	c := Condition{Type: "CertificateReloadFailed", Status: "False", Reason: "CertificateLoaded", Message: "the TLS serving certificate on disk is the one served"}
	if rec.cert.message != "" {
		c.Status, c.Reason = "True", "PairRefused"
		c.Message = "since " + rec.cert.since.UTC().Format(time.RFC3339) + " the previous certificate is served: " + rec.cert.message
	}
	return append(cs, c)
}
