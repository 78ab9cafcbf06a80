package status

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"time"
)

// TLSStatus is the served certificate and, for each CA a pointer config
// may trust, until when a node trusting only that CA verifies the chain
// (the certificate's issuer directly, older CAs through the
// cross-signatures served with it; docs/pki.md).
type TLSStatus struct {
	Subject  string    `json:"subject,omitempty"`
	Issuer   string    `json:"issuer,omitempty"`
	NotAfter time.Time `json:"notAfter,omitzero"`
	Trust    []Trust   `json:"trust,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// Trust is one CA and the last moment the served chain verifies for a
// node trusting only it; Expired once that has passed (such a node is
// refused at TLS).
type Trust struct {
	CA      string    `json:"ca"`
	Until   time.Time `json:"until"`
	Expired bool      `json:"expired,omitempty"`
	Via     string    `json:"via"`
}

// tls is /status's tls section; nil without a TLS listener.
func (c *certificateState) tls() *TLSStatus {
	if c.served == nil {
		return nil
	}
	cert, err := c.served()
	return tlsStatus(time.Now(), cert, err)
}

func tlsStatus(now time.Time, c *tls.Certificate, err error) *TLSStatus {
	if err != nil {
		return &TLSStatus{Error: err.Error()}
	}
	if c == nil || len(c.Certificate) == 0 {
		return nil
	}
	var chain []*x509.Certificate
	for _, der := range c.Certificate {
		x, err := x509.ParseCertificate(der)
		if err != nil {
			return &TLSStatus{Error: "parsing the served chain: " + err.Error()}
		}
		chain = append(chain, x)
	}
	leaf := chain[0]
	st := &TLSStatus{Subject: leaf.Subject.CommonName, Issuer: leaf.Issuer.CommonName, NotAfter: leaf.NotAfter}
	type reach struct {
		subject []byte
		until   time.Time
	}
	todo := []reach{{leaf.RawIssuer, leaf.NotAfter}}
	st.Trust = append(st.Trust, Trust{CA: leaf.Issuer.CommonName, Until: leaf.NotAfter, Via: "issuer of the certificate"})
	used := map[*x509.Certificate]bool{}
	for len(todo) > 0 {
		r := todo[0]
		todo = todo[1:]
		for _, x := range chain[1:] {
			if used[x] || !bytes.Equal(x.RawSubject, r.subject) || bytes.Equal(x.RawSubject, x.RawIssuer) {
				continue
			}
			used[x] = true
			until := r.until
			if x.NotAfter.Before(until) {
				until = x.NotAfter
			}
			st.Trust = append(st.Trust, Trust{CA: x.Issuer.CommonName, Until: until, Via: "cross-signature of " + x.Subject.CommonName})
			todo = append(todo, reach{x.RawIssuer, until})
		}
	}
	for i := range st.Trust {
		st.Trust[i].Expired = !now.Before(st.Trust[i].Until)
	}
	return st
}
