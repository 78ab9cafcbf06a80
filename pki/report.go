package pki

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"time"
)

// Report is what `mcs pki status` and the controller's /status show: the
// CAs, the serving certificate, every pointer config, which CAs it trusts
// and until when it can boot a node, and the pool tokens (never the
// tokens themselves).
type Report struct {
	Time     time.Time       `json:"time"`
	CA       *CertInfo       `json:"ca,omitempty"`
	Bundle   []CertInfo      `json:"bundle"`
	Serving  *CertInfo       `json:"serving,omitempty"`
	Chain    []CertInfo      `json:"chain,omitempty"`
	Pointers []PointerReport `json:"pointers"`
	Tokens   []TokenReport   `json:"tokens,omitempty"`
	// Problems are what a person should know of the run: objects found
	// unreadable (replaced by this pass), and other writers' changes a
	// rotation met and finished after.
	Problems []string `json:"problems,omitempty"`
	// Changes are the writes of the pass (or, dry run, those it would make).
	Changes []string `json:"changes"`
}

// CertInfo describes one certificate.
type CertInfo struct {
	Subject     string    `json:"subject"`
	Issuer      string    `json:"issuer"`
	SHA256      string    `json:"sha256"`
	NotBefore   time.Time `json:"notBefore"`
	NotAfter    time.Time `json:"notAfter"`
	ReplacedAt  time.Time `json:"replacedAt,omitzero"`
	Hosts       []string  `json:"hosts,omitempty"`
	CrossSigned bool      `json:"crossSigned,omitempty"`
}

// PointerReport is one user-data Secret's pointer config.
type PointerReport struct {
	Secret  string   `json:"secret"`
	Pool    string   `json:"pool,omitempty"`
	Version string   `json:"version,omitempty"`
	Managed bool     `json:"managed"`
	Trusts  []string `json:"trusts"`
	// WorksUntil is when a node booting with this pointer config stops
	// reaching the server (its CAs expire, or the certificate they verify
	// is replaced by one they cannot); zero when it does not work now.
	// Below spec 3.2 only the first CA of each entry counts: the oldest
	// boot images reading it read no more.
	WorksUntil time.Time `json:"worksUntil,omitzero"`
	LeftAlone  string    `json:"leftAlone,omitempty"`
}

// TokenReport is one pool's token Secret, without the tokens.
type TokenReport struct {
	Pool          string    `json:"pool"`
	RotatedAt     time.Time `json:"rotatedAt"`
	NextRotation  time.Time `json:"nextRotation"`
	PreviousUntil time.Time `json:"previousValidUntil,omitzero"`
}

func info(c *x509.Certificate, refresh time.Duration) CertInfo {
	sum := sha256.Sum256(c.Raw)
	i := CertInfo{Subject: c.Subject.CommonName, Issuer: c.Issuer.CommonName, SHA256: hex.EncodeToString(sum[:8]),
		NotBefore: c.NotBefore, NotAfter: c.NotAfter, CrossSigned: c.IsCA && !bytes.Equal(c.RawSubject, c.RawIssuer)}
	if refresh > 0 {
		at := c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 5)
		if r := c.NotBefore.Add(refresh); r.Before(at) {
			at = r
		}
		i.ReplacedAt = at
	}
	if !c.IsCA {
		i.Hosts = append(append(i.Hosts, c.DNSNames...), ipStrings(c)...)
	}
	return i
}

func ipStrings(c *x509.Certificate) []string {
	var out []string
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

func report(now time.Time, cl *cluster, d desired, toks map[string]poolToken, left map[string]string, lt Lifetimes, tp TokenPolicy) *Report {
	r := &Report{Time: now, Problems: cl.cur.problems, Bundle: []CertInfo{}, Pointers: []PointerReport{}, Changes: []string{}}
	if d.signer != nil {
		ci := info(d.signer.cert, lt.CARefresh)
		r.CA = &ci
	}
	for _, c := range d.bundle {
		r.Bundle = append(r.Bundle, info(c, 0))
	}
	if d.serving != nil {
		ci := info(d.serving.cert, lt.CertRefresh)
		r.Serving = &ci
	}
	for _, c := range d.chain {
		r.Chain = append(r.Chain, info(c, 0))
	}
	for _, s := range cl.userData {
		_, managed := s.Labels[managedLabel]
		pr := PointerReport{Secret: s.Namespace + "/" + s.Name, Managed: managed, Trusts: []string{}, LeftAlone: left[s.Name]}
		if p, err := readPointer(s.Data[userDataKey]); err == nil {
			pr.Pool, pr.Version = p.Pool, p.Version
			for _, ca := range p.CAs {
				pr.Trusts = append(pr.Trusts, ca.Subject.CommonName)
			}
			pr.WorksUntil = worksUntil(now, p.trusted(), d, lt)
		}
		r.Pointers = append(r.Pointers, pr)
	}
	for _, pool := range sortedKeys(toks) {
		t := toks[pool]
		tr := TokenReport{Pool: pool, RotatedAt: t.RotatedAt, NextRotation: t.RotatedAt.Add(tp.Rotation), PreviousUntil: t.PreviousUntil}
		r.Tokens = append(r.Tokens, tr)
	}
	return r
}

// worksUntil is the last moment a node trusting cas reaches the server: a
// CA that is the signer, or that the signer chains to through
// cross-signatures, keeps working until it (or a cross-signature on the
// way) expires, since every new CA is cross-signed by the one it replaces;
// a CA that only verifies the current serving certificate (one mcs has no
// key of) works until that certificate is replaced. Zero: it does not
// work now.
func worksUntil(now time.Time, cas []*x509.Certificate, d desired, lt Lifetimes) time.Time {
	var best time.Time
	for _, ca := range cas {
		if !now.Before(ca.NotAfter) {
			continue
		}
		var until time.Time
		if d.signer != nil && d.signer.cert.Equal(ca) {
			until = ca.NotAfter
		}
		if u := crossUntil(now, ca, d); u.After(until) {
			until = u
		}
		if until.IsZero() && d.serving != nil && d.serving.cert.CheckSignatureFrom(ca) == nil {
			until = info(d.serving.cert, lt.CertRefresh).ReplacedAt
		}
		if until.After(best) {
			best = until
		}
	}
	return best
}

// crossUntil is how long the signer stays reachable from ca through
// cross-signatures: the earliest expiry on the best path.
func crossUntil(now time.Time, ca *x509.Certificate, d desired) time.Time {
	if d.signer == nil {
		return time.Time{}
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(ca)
	for _, x := range d.cross {
		inter.AddCert(x)
	}
	var until time.Time
	for _, x := range d.cross {
		if !bytes.Equal(x.RawSubject, d.signer.cert.RawSubject) {
			continue
		}
		chains, _ := x.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		for _, ch := range chains {
			if u := minNotAfter(ch); u.After(until) {
				until = u
			}
		}
	}
	return until
}

func minNotAfter(certs []*x509.Certificate) time.Time {
	var m time.Time
	for _, c := range certs {
		if m.IsZero() || c.NotAfter.Before(m) {
			m = c.NotAfter
		}
	}
	return m
}
