package status

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type testCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func issue(t *testing.T, cn string, notAfter time.Time, ca bool, pub *ecdsa.PrivateKey, parent *testCert) *testCert {
	t.Helper()
	key := pub
	if key == nil {
		key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, IsCA: ca, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	signer, signKey := tmpl, key
	if parent != nil {
		signer, signKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCert{cert: c, key: key}
}

// crossChain is a rotation's serving chain: leaf "mcs" (2 h from now),
// issued by CA b (3 h), served with b cross-signed by the older CA a (1 h).
func crossChain(t *testing.T, now time.Time, aName, bName string) (a, leaf *testCert, c *tls.Certificate) {
	t.Helper()
	a = issue(t, aName, now.Add(time.Hour), true, nil, nil)
	b := issue(t, bName, now.Add(3*time.Hour), true, nil, nil)
	bByA := issue(t, bName, a.cert.NotAfter, true, b.key, a)
	leaf = issue(t, "mcs", now.Add(2*time.Hour), false, nil, b)
	return a, leaf, &tls.Certificate{Certificate: [][]byte{leaf.cert.Raw, bByA.cert.Raw}}
}

// /status's tls section: the issuer until the certificate expires, an
// older CA through its cross-signature until that expires, and an expired
// one marked.
func TestTLSStatus(t *testing.T) {
	now := time.Now()
	a, leaf, c := crossChain(t, now, "A", "B")
	st := tlsStatus(now, c, nil)
	if st.Subject != "mcs" || len(st.Trust) != 2 {
		t.Fatalf("%+v", st)
	}
	if got := st.Trust[0]; got.CA != "B" || !got.Until.Equal(leaf.cert.NotAfter) || got.Expired {
		t.Errorf("issuer: %+v", got)
	}
	if got := st.Trust[1]; got.CA != "A" || !got.Until.Equal(a.cert.NotAfter) || got.Expired {
		t.Errorf("through the cross-signature: %+v", got)
	}
	if st := tlsStatus(now.Add(90*time.Minute), c, nil); !st.Trust[1].Expired || st.Trust[0].Expired {
		t.Errorf("after A expired: %+v", st.Trust)
	}
}

// The status page shows the served certificate and until when each CA's
// pointer configs boot nodes.
func TestStatusPageTLS(t *testing.T) {
	_, _, c := crossChain(t, time.Now(), "CA-A", "CA-B")
	rec, err := New(Config{ServingCert: func() (*tls.Certificate, error) { return c, nil }, Served: func() *pipeline.Snapshot { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	if err := WritePage(w, rec.Status()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Serving certificate", "CA-A", "cross-signature of CA-B", "(in 59m"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
