package pki

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"time"
)

// Names of what is managed, as OpenShift's machine-config-operator names them.
const (
	mcoNamespace  = "openshift-machine-config-operator"
	mapiNamespace = "openshift-machine-api"
	signerName    = "machine-config-server-ca" // Secret: the signing CA
	bundleName    = "machine-config-server-ca" // ConfigMap: every unexpired CA
	servingName   = "machine-config-server-tls"
	bundleKey     = "ca-bundle.crt"
	crossKey      = "cross-signed.crt" // mcs's: the signer, signed by the CAs before it
	// managedLabel marks the <pool>-user-data-managed Secrets, generated
	// from the bundle; the user-data rewrite leaves them to their generator.
	managedLabel = "machineconfiguration.openshift.io/managed-ca-bundle-derived-from-configmap"
	userDataKey  = "userData"
)

// Lifetimes say how long the CA and the serving certificate live and when
// each is replaced (or at 80% of its life, whichever comes first, as
// library-go does), and the serving certificate's key.
type Lifetimes struct {
	CAValidity, CARefresh     time.Duration
	CertValidity, CertRefresh time.Duration
	// ServingKey is the serving certificate's key type; a certificate of
	// another is replaced. Zero is ECDSA P-256.
	ServingKey KeyType
}

// DefaultLifetimes are upstream's: ten years, replaced after eight.
var DefaultLifetimes = Lifetimes{
	CAValidity: 10 * 365 * 24 * time.Hour, CARefresh: 8 * 365 * 24 * time.Hour,
	CertValidity: 10 * 365 * 24 * time.Hour, CertRefresh: 8 * 365 * 24 * time.Hour,
}

// validate refuses lifetimes that cannot work: a refresh must come before
// the expiry, and a certificate must live at least a few seconds.
func (l Lifetimes) validate() error {
	if !slices.Contains(keyTypes, l.ServingKey.orDefault()) {
		return fmt.Errorf("serving key type %q: want one of %v", l.ServingKey, keyTypes)
	}
	for _, c := range []struct {
		what              string
		validity, refresh time.Duration
	}{{"CA", l.CAValidity, l.CARefresh}, {"serving certificate", l.CertValidity, l.CertRefresh}} {
		if c.validity < 5*time.Second {
			return fmt.Errorf("%s validity %s is too short", c.what, c.validity)
		}
		if c.refresh <= 0 || c.refresh >= c.validity {
			return fmt.Errorf("%s refresh %s must be positive and below its validity %s", c.what, c.refresh, c.validity)
		}
	}
	return nil
}

// current is what the cluster holds, parsed.
type current struct {
	signer  *pair
	cross   []*x509.Certificate
	bundle  []*x509.Certificate
	serving *pair
	served  []*x509.Certificate // what the serving Secret's tls.crt carries after the certificate
	carried []*x509.Certificate // CAs that pointer configs trust
	// problems are objects that exist but could not be read: they are
	// replaced, and said so.
	problems []string
}

// desired is what the cluster should hold; changed says which objects
// differ from current, and reasons why.
type desired struct {
	signer  *pair
	cross   []*x509.Certificate
	bundle  []*x509.Certificate
	serving *pair
	chain   []*x509.Certificate // served after the serving certificate

	signerChanged, servingChanged bool
	reasons                       []string
}

// plan decides the next state: a new signer when the current one is
// missing or due (or force), cross-signed by the one it replaces; the
// bundle of every unexpired CA, including those pointer configs carry; a
// new serving certificate when due, for other hosts, or as soon as the old
// one's issuer is reachable through a cross-signature. The cross-signatures
// served now stay with the signer's until they expire: whatever the
// signer Secret says, no pass shrinks a chain a node may still need.
func plan(now time.Time, cur current, hosts []string, lt Lifetimes, force bool) (desired, error) {
	d := desired{signer: cur.signer, cross: unexpired(now, withServed(cur.cross, cur.served)), serving: cur.serving, reasons: cur.problems}
	if why := due(now, cur.signer, lt.CARefresh); why != "" || force {
		if force {
			why = "rotation asked for"
		}
		others := slices.Concat(cur.bundle, cur.carried, cur.cross)
		if cur.signer != nil {
			others = append(others, cur.signer.cert)
		}
		next, err := newSigner(now, lt.CAValidity, others...)
		if err != nil {
			return d, err
		}
		d.reasons = append(d.reasons, "new CA: "+why)
		if old := cur.signer; old != nil && now.Before(old.cert.NotAfter) {
			x, err := crossSign(next, old)
			if err != nil {
				return d, err
			}
			d.cross = append([]*x509.Certificate{x}, d.cross...)
		}
		d.signer, d.signerChanged = next, true
	}
	prev := []*x509.Certificate{d.signer.cert}
	if cur.signer != nil {
		prev = append(prev, cur.signer.cert)
	}
	d.bundle = signerFirst(mergeCAs(now, slices.Concat(prev, cur.bundle, onlyCAs(cur.carried))...), d.signer.cert)
	if why := servingDue(now, d, hosts, lt); why != "" {
		s, err := newServing(d.signer, hosts, now, lt.CertValidity, lt.ServingKey)
		if err != nil {
			return d, err
		}
		d.reasons = append(d.reasons, "new serving certificate: "+why)
		d.serving, d.servingChanged = s, true
	}
	d.chain = chainFor(d.serving.cert, d.cross)
	return d, nil
}

// signerFirst moves the signer to the front of bundle. Ignition before
// 2.4.0 (every spec-2 boot image, and spec 3.0 and 3.1 ones) reads only
// the first certificate of a certificateAuthorities entry: that must be
// the CA that signs the served certificate and outlives the others, not
// whichever sorted first (a CA replaced within its first second has the
// same NotBefore as its successor).
func signerFirst(bundle []*x509.Certificate, signer *x509.Certificate) []*x509.Certificate {
	out := []*x509.Certificate{signer}
	for _, c := range bundle {
		if !c.Equal(signer) {
			out = append(out, c)
		}
	}
	return out
}

// due says why c must be replaced: missing, expired, past refresh after
// its start, or past 80% of its life; "" when it is not due.
func due(now time.Time, p *pair, refresh time.Duration) string {
	switch {
	case p == nil:
		return "none exists"
	case !now.Before(p.cert.NotAfter):
		return "expired at " + p.cert.NotAfter.UTC().Format(time.RFC3339)
	}
	start, end := p.cert.NotBefore, p.cert.NotAfter
	if at := end.Add(-end.Sub(start) / 5); !now.Before(at) {
		return "past 80% of its life at " + at.UTC().Format(time.RFC3339)
	}
	if at := start.Add(refresh); !now.Before(at) {
		return "past its refresh time " + at.UTC().Format(time.RFC3339)
	}
	return ""
}

func servingDue(now time.Time, d desired, hosts []string, lt Lifetimes) string {
	s := d.serving
	if why := due(now, s, lt.CertRefresh); why != "" {
		return why
	}
	if missing := missingHosts(s.cert, hosts); len(missing) > 0 {
		return fmt.Sprintf("does not name %v", missing)
	}
	if got := keyTypeOf(s.cert); got != lt.ServingKey.orDefault() {
		return fmt.Sprintf("its key is %s, %s asked for", got, lt.ServingKey.orDefault())
	}
	if bytes.Equal(s.cert.RawIssuer, d.signer.cert.RawSubject) {
		return ""
	}
	if !inBundle(s.cert, d.bundle) {
		return "its issuer is in no unexpired CA of the bundle"
	}
	// Signed by an older CA: replace it once a node trusting that CA
	// still reaches the new one through a cross-signature; without one (a
	// CA whose key mcs never had), once the new CA has had a tenth of the
	// refresh period to reach the nodes' pointer configs, as library-go.
	for _, x := range d.cross {
		if bytes.Equal(x.RawIssuer, s.cert.RawIssuer) {
			return "signed by the previous CA, which cross-signs the new one"
		}
	}
	if now.After(d.signer.cert.NotBefore.Add(lt.CertRefresh / 10)) {
		return "signed by a CA mcs cannot cross-sign, and the new CA has been in the bundle for a tenth of the refresh period"
	}
	return ""
}

func missingHosts(c *x509.Certificate, hosts []string) []string {
	var out []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
				out = append(out, h)
			}
		} else if !slices.Contains(c.DNSNames, h) {
			out = append(out, h)
		}
	}
	return out
}

func inBundle(c *x509.Certificate, bundle []*x509.Certificate) bool {
	for _, ca := range bundle {
		if c.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

// chainFor is the cross-signatures that lead from leaf's issuer back to
// older CAs, each once: a node trusting any of those CAs verifies leaf.
func chainFor(leaf *x509.Certificate, cross []*x509.Certificate) []*x509.Certificate {
	var out []*x509.Certificate
	want := [][]byte{leaf.RawIssuer}
	for len(want) > 0 {
		subject := want[0]
		want = want[1:]
		for _, x := range cross {
			if bytes.Equal(x.RawSubject, subject) && !slices.Contains(out, x) {
				out = append(out, x)
				want = append(want, x.RawIssuer)
			}
		}
	}
	return out
}

// withServed is cross and, once each, the cross-signatures of served (CAs
// not self-signed).
func withServed(cross, served []*x509.Certificate) []*x509.Certificate {
	out := slices.Clone(cross)
	for _, c := range served {
		if c.IsCA && !bytes.Equal(c.RawSubject, c.RawIssuer) && !slices.ContainsFunc(out, c.Equal) {
			out = append(out, c)
		}
	}
	return out
}

func unexpired(now time.Time, certs []*x509.Certificate) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range certs {
		if now.Before(c.NotAfter) {
			out = append(out, c)
		}
	}
	return out
}

func onlyCAs(certs []*x509.Certificate) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range certs {
		if c.IsCA {
			out = append(out, c)
		}
	}
	return out
}
