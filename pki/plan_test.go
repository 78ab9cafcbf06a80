package pki

import (
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vincent-petithory/dataurl"
)

var testLifetimes = Lifetimes{CAValidity: time.Hour, CARefresh: 40 * time.Minute, CertValidity: 30 * time.Minute, CertRefresh: 20 * time.Minute}

var hosts = []string{"api-int.example.com", "10.0.0.5"}

func mustPlan(t *testing.T, now time.Time, cur current, force bool) desired {
	t.Helper()
	d, err := plan(now, cur, hosts, testLifetimes, force)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func applied(d desired) current {
	return current{signer: d.signer, cross: d.cross, bundle: d.bundle, serving: d.serving}
}

// verifies reports whether a node trusting cas verifies the served chain
// at now for host, as Ignition's Go TLS client does.
func verifies(now time.Time, d desired, cas ...*x509.Certificate) error {
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	for _, c := range d.chain {
		inter.AddCert(c)
	}
	_, err := d.serving.cert.Verify(x509.VerifyOptions{DNSName: "api-int.example.com", Roots: roots, Intermediates: inter, CurrentTime: now})
	return err
}

func TestPlanRotation(t *testing.T) {
	t0 := time.Now()
	d0 := mustPlan(t, t0, current{}, false)
	if !d0.signerChanged || !d0.servingChanged || len(d0.bundle) != 1 || len(d0.chain) != 0 {
		t.Fatalf("first pass: %+v", d0.reasons)
	}
	caA := d0.signer.cert
	if missing := missingHosts(d0.serving.cert, hosts); len(missing) > 0 {
		t.Fatalf("serving certificate misses %v", missing)
	}
	if d := mustPlan(t, t0.Add(time.Minute), applied(d0), false); d.signerChanged || d.servingChanged {
		t.Fatalf("nothing due, yet: %v", d.reasons)
	}
	// Past the CA's refresh (40m) the CA is replaced, cross-signed by A,
	// and the serving certificate moves to B at once.
	t1 := t0.Add(41 * time.Minute)
	d1 := mustPlan(t, t1, applied(d0), false)
	if !d1.signerChanged || !d1.servingChanged || len(d1.cross) != 1 || len(d1.bundle) != 2 {
		t.Fatalf("rotation: %v, cross %d, bundle %d", d1.reasons, len(d1.cross), len(d1.bundle))
	}
	caB := d1.signer.cert
	for name, cas := range map[string][]*x509.Certificate{"old pointer (A)": {caA}, "new pointer (bundle)": d1.bundle, "B only": {caB}} {
		if err := verifies(t1, d1, cas...); err != nil {
			t.Errorf("%s after rotation: %v", name, err)
		}
	}
	// A expires at t0+1h: the old pointer fails from then, the bundle's B works.
	t2 := caA.NotAfter.Add(time.Second)
	d2 := mustPlan(t, t2, applied(d1), false)
	if err := verifies(t2, d2, caA); err == nil {
		t.Error("the old pointer still verifies after its CA expired")
	}
	if err := verifies(t2, d2, d1.bundle...); err != nil {
		t.Errorf("new pointer after A expired: %v", err)
	}
	if len(d2.bundle) != 1 || len(d2.chain) != 0 {
		t.Errorf("expired A kept: bundle %d, chain %d", len(d2.bundle), len(d2.chain))
	}
}

func TestPlanChainsThroughTwoRotations(t *testing.T) {
	t0 := time.Now()
	d0 := mustPlan(t, t0, current{}, false)
	d1 := mustPlan(t, t0.Add(time.Minute), applied(d0), true)
	d2 := mustPlan(t, t0.Add(2*time.Minute), applied(d1), true)
	if len(d2.chain) != 2 {
		t.Fatalf("chain of %d cross-signatures, want 2 (C by B, B by A)", len(d2.chain))
	}
	if err := verifies(t0.Add(2*time.Minute), d2, d0.signer.cert); err != nil {
		t.Errorf("a pointer from before both rotations: %v", err)
	}
	until := worksUntil(t0.Add(2*time.Minute), []*x509.Certificate{d0.signer.cert}, d2, testLifetimes)
	if !until.Equal(d0.signer.cert.NotAfter) {
		t.Errorf("A's pointer works until %v, want A's expiry %v", until, d0.signer.cert.NotAfter)
	}
}

// The bundle keeps every unexpired CA a pointer config carries, even one
// the bundle ConfigMap lost (an admin's edit, an adopted cluster).
// A pass that read the signer Secret before a rotation and the serving
// Secret after it (B's certificate, served with B cross-signed by A) must
// not write that certificate without the cross-signature while A is
// valid: a node trusting only A would no longer verify it.
func TestPlanKeepsServedCrossSignature(t *testing.T) {
	t0 := time.Now()
	d0 := mustPlan(t, t0, current{}, false)
	d1 := mustPlan(t, t0.Add(time.Minute), applied(d0), true)
	caA := d0.signer.cert
	mixed := current{signer: d0.signer, cross: d0.cross, bundle: d1.bundle, serving: d1.serving, served: d1.chain}
	now := t0.Add(2 * time.Minute)
	// The rehearsal's lifetimes: B's certificate is not replaced for
	// being signed by a CA other than the signer read.
	lt := testLifetimes
	lt.CertRefresh = 50 * time.Minute
	d, err := plan(now, mixed, hosts, lt, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.servingChanged || len(d.chain) != 1 {
		t.Fatalf("from the mixed view: %v, chain of %d cross-signatures, want B's certificate with B by A", d.reasons, len(d.chain))
	}
	if err := verifies(now, d, caA); err != nil {
		t.Errorf("a pointer trusting A: %v", err)
	}
	// Once A has expired, the cross-signature goes.
	after := caA.NotAfter.Add(time.Second)
	if d, err := plan(after, mixed, hosts, lt, false); err != nil || len(d.chain) != 0 {
		t.Errorf("chain of %d cross-signatures after A expired (%v)", len(d.chain), err)
	}
}

func TestPlanBundleKeepsCarriedCAs(t *testing.T) {
	t0 := time.Now()
	other, err := newSigner(t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := newSigner(t0.Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	d := mustPlan(t, t0, current{carried: []*x509.Certificate{other.cert, expired.cert}}, false)
	var has, hasExpired bool
	for _, c := range d.bundle {
		has = has || c.Equal(other.cert)
		hasExpired = hasExpired || c.Equal(expired.cert)
	}
	if !has || hasExpired {
		t.Errorf("bundle keeps the carried CA: %v, the expired one: %v", has, hasExpired)
	}
}

// An adopted serving certificate from a CA whose key mcs does not have is
// kept until its own refresh, after the new CA has had time to spread.
func TestPlanAdoptedServingKept(t *testing.T) {
	t0 := time.Now()
	root, _ := newSigner(t0, 2*time.Hour)
	leaf, err := newServing(root, hosts, t0, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	d := mustPlan(t, t0, current{serving: leaf, carried: []*x509.Certificate{root.cert}}, false)
	if d.servingChanged {
		t.Fatalf("replaced the adopted serving certificate at once: %v", d.reasons)
	}
	if err := verifies(t0, d, root.cert); err != nil {
		t.Errorf("the installer's pointer: %v", err)
	}
	if w := worksUntil(t0, []*x509.Certificate{root.cert}, d, testLifetimes); w.IsZero() || w.After(leaf.cert.NotAfter) {
		t.Errorf("root-trusting pointer works until %v", w)
	}
	if d := mustPlan(t, t0.Add(21*time.Minute), applied(d), false); !d.servingChanged {
		t.Error("adopted serving certificate not replaced past its refresh")
	}
}

func TestPlanHostsChanged(t *testing.T) {
	t0 := time.Now()
	d0 := mustPlan(t, t0, current{}, false)
	d1, err := plan(t0, applied(d0), append(hosts, "10.0.0.6"), testLifetimes, false)
	if err != nil || !d1.servingChanged || d1.signerChanged {
		t.Fatalf("a new internal IP: serving %v signer %v %v", d1.servingChanged, d1.signerChanged, err)
	}
}

func pointerJSON(t *testing.T, cas ...string) []byte {
	list := []any{}
	for _, c := range cas {
		list = append(list, map[string]any{"source": c})
	}
	b, _ := json.Marshal(map[string]any{"ignition": map[string]any{"version": "3.2.0",
		"config":   map[string]any{"merge": []any{map[string]any{"source": "https://api-int:22623/config/worker"}}},
		"security": map[string]any{"tls": map[string]any{"certificateAuthorities": list}}}})
	return b
}

// Upstream's rules (reconcileSecret, isUserDataSecret), one case each,
// and where mcs goes further.
func TestRewriteUserData(t *testing.T) {
	bundle := []byte("-----BEGIN CERTIFICATE-----\nnew\n-----END CERTIFICATE-----\n")
	old := dataurl.EncodeBytes([]byte("old"))
	cases := map[string]struct {
		s         userDataSecret
		leftAlone string // substring of the reason; "" means rewritten
		unchanged bool
	}{
		"rewritten: one data-URL CA":     {s: userDataSecret{Data: map[string][]byte{"userData": pointerJSON(t, old)}}},
		"already the bundle":             {s: userDataSecret{Data: map[string][]byte{"userData": pointerJSON(t, dataurl.EncodeBytes(bundle))}}, unchanged: true},
		"upstream: managed label":        {s: userDataSecret{Labels: map[string]string{managedLabel: ""}, Data: map[string][]byte{"userData": pointerJSON(t, old)}}, leftAlone: "generated"},
		"upstream: no userData":          {s: userDataSecret{Data: map[string][]byte{"other": []byte("{}")}}, leftAlone: "no userData"},
		"upstream: not JSON":             {s: userDataSecret{Data: map[string][]byte{"userData": []byte("#cloud-config")}}, leftAlone: "not JSON"},
		"upstream: no ignition object":   {s: userDataSecret{Data: map[string][]byte{"userData": []byte(`{"a":1}`)}}, leftAlone: "no ignition"},
		"upstream: no CA list":           {s: userDataSecret{Data: map[string][]byte{"userData": []byte(`{"ignition":{"version":"3.2.0"}}`)}}, leftAlone: "no ignition.security"},
		"upstream: additional CAs":       {s: userDataSecret{Data: map[string][]byte{"userData": pointerJSON(t, old, old)}}, leftAlone: "additional CAs"},
		"mcs: empty CA list":             {s: userDataSecret{Data: map[string][]byte{"userData": pointerJSON(t)}}, leftAlone: "is empty"},
		"mcs: CA served from a URL":      {s: userDataSecret{Data: map[string][]byte{"userData": pointerJSON(t, "https://ca.example.com/ca.pem")}}, leftAlone: "not a data URL"},
		"mcs: CA with verification hash": {s: userDataSecret{Data: map[string][]byte{"userData": []byte(strings.Replace(string(pointerJSON(t, old)), `[{"source":"data:`, `[{"verification":{"hash":"sha512-00"},"source":"data:`, 1))}}, leftAlone: "verification"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := rewriteUserData(tc.s, bundle)
			if tc.leftAlone != "" {
				if err == nil || !strings.Contains(err.Error(), tc.leftAlone) {
					t.Fatalf("got %v, %q; want left alone: %s", err, out, tc.leftAlone)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.unchanged != (out == nil) {
				t.Fatalf("unchanged = %v, want %v", out == nil, tc.unchanged)
			}
			if out != nil && !strings.Contains(string(out), dataurl.EncodeBytes(bundle)) {
				t.Errorf("rewritten config lacks the bundle: %s", out)
			}
		})
	}
}

// The generated pointer config is never of a newer spec than the pool's
// boot image reads, and carries the token where that spec can.
func TestPointerConfigSpec(t *testing.T) {
	cases := map[string]struct {
		token, ceiling, want string
		carriesToken         bool
		note                 string
	}{
		"no reference, no token":    {want: "3.0.0"},
		"no reference, token":       {token: "t", want: "3.1.0", carriesToken: true},
		"boot image reads 3.4":      {token: "t", ceiling: "3.4.0", want: "3.1.0", carriesToken: true},
		"boot image reads 3.0":      {token: "t", ceiling: "3.0.0", want: "3.0.0", note: "cannot carry a token"},
		"boot image reads spec 2.2": {token: "t", ceiling: "2.2.0", want: "2.2.0", note: "spec-2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := pointerConfig("api-int.example.com:22623", "worker", []byte("ca"), tc.token, tc.ceiling)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readPointer(p.Config)
			if err != nil || got.Version != tc.want || got.Pool != "worker" {
				t.Fatalf("pointer %s: %+v %v", p.Config, got, err)
			}
			if strings.Contains(string(p.Config), "Bearer t") != tc.carriesToken || !strings.Contains(p.Note, tc.note) {
				t.Errorf("token carried %v, note %q", !tc.carriesToken, p.Note)
			}
		})
	}
}

func TestRotateToken(t *testing.T) {
	p := TokenPolicy{Rotation: time.Hour, Grace: 10 * time.Minute}
	t0 := time.Now()
	a, changed := rotateToken(poolToken{}, t0, p)
	if !changed || a.Token == "" || a.Previous != "" {
		t.Fatalf("first token: %+v", a)
	}
	if _, changed := rotateToken(a, t0.Add(59*time.Minute), p); changed {
		t.Fatal("rotated before its time")
	}
	b, _ := rotateToken(a, t0.Add(time.Hour), p)
	if b.Token == a.Token || b.Previous != a.Token || len(b.accepted(t0.Add(time.Hour+9*time.Minute))) != 2 {
		t.Fatalf("rotation: %+v", b)
	}
	if got := b.accepted(t0.Add(time.Hour + 10*time.Minute)); len(got) != 1 || got[0] != b.Token {
		t.Errorf("after the grace: %v", got)
	}
	c, changed := rotateToken(b, t0.Add(time.Hour+10*time.Minute), p)
	if !changed || c.Previous != "" || c.Token != b.Token {
		t.Errorf("grace ended: %+v", c)
	}
}

// Three CAs made within one second still have three names: clients pick
// the CA to verify with by name.
func TestSignerNamesDistinct(t *testing.T) {
	t0 := time.Now()
	d := mustPlan(t, t0, current{}, false)
	names := map[string]bool{d.signer.cert.Subject.CommonName: true}
	for range 2 {
		d = mustPlan(t, t0, applied(d), true)
		if names[d.signer.cert.Subject.CommonName] {
			t.Fatalf("a second CA named %q", d.signer.cert.Subject.CommonName)
		}
		names[d.signer.cert.Subject.CommonName] = true
	}
}

// firstOnly is what Ignition before 2.4.0 (spec-2 boot images, and spec
// 3.0 and 3.1 ones) trusts of a bundle: its first certificate.
func firstOnly(bundle []*x509.Certificate) *x509.Certificate { return bundle[0] }

// A CA replaced within its first second (mcs pki rotate right after
// install) has its successor's NotBefore: the bundle still leads with the
// new signer, so a boot image reading only the first certificate keeps
// booting after the old CA expires. Repeated: the tie used to be broken
// by the certificates' bytes, a coin toss.
func TestBundleLeadsWithSigner(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	short := Lifetimes{CAValidity: 2 * time.Minute, CARefresh: time.Minute, CertValidity: time.Hour, CertRefresh: 50 * time.Minute}
	for i := range 16 {
		d0, err := plan(t0, current{}, hosts, short, false)
		if err != nil {
			t.Fatal(err)
		}
		cur := applied(d0)
		cur.carried = d0.bundle // the installer's pointer config
		d1 := mustPlan(t, t0.Add(time.Duration(i)*time.Millisecond), cur, true)
		if !d1.signer.cert.NotBefore.Equal(d0.signer.cert.NotBefore) {
			t.Fatalf("not the tie: %v and %v", d1.signer.cert.NotBefore, d0.signer.cert.NotBefore)
		}
		if len(d1.bundle) != 2 || !firstOnly(d1.bundle).Equal(d1.signer.cert) {
			t.Fatalf("try %d: the bundle leads with %q, not the new signer %q", i, firstOnly(d1.bundle).Subject.CommonName, d1.signer.cert.Subject.CommonName)
		}
		after := d0.signer.cert.NotAfter.Add(time.Second)
		if err := verifies(after, d1, firstOnly(d1.bundle)); err != nil {
			t.Fatalf("try %d: a first-certificate reader after the old CA expired: %v", i, err)
		}
	}
}

// mcs pki status judges a pointer config below spec 3.2 by the first CA of
// each entry, which is all its oldest boot images read.
func TestPointerTrustedBySpec(t *testing.T) {
	t0 := time.Now()
	d0 := mustPlan(t, t0, current{}, false)
	d1 := mustPlan(t, t0.Add(time.Minute), applied(d0), true)
	oldFirst := encodeCerts(d0.signer.cert, d1.signer.cert)
	for _, tc := range []struct {
		version string
		want    time.Time
	}{
		{"2.2.0", d0.signer.cert.NotAfter},
		{"3.1.0", d0.signer.cert.NotAfter},
		{"3.2.0", d1.signer.cert.NotAfter},
		{"3.4.0", d1.signer.cert.NotAfter},
	} {
		t.Run(tc.version, func(t *testing.T) {
			raw := `{"ignition":{"version":"` + tc.version + `","security":{"tls":{"certificateAuthorities":[{"source":"` + dataurl.EncodeBytes(oldFirst) + `"}]}}}}`
			p, err := readPointer([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			if got := worksUntil(t0.Add(time.Minute), p.trusted(), d1, testLifetimes); !got.Equal(tc.want) {
				t.Errorf("works until %v, want %v", got, tc.want)
			}
		})
	}
}
