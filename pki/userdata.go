package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coreos/go-semver/semver"
	"github.com/vincent-petithory/dataurl"
)

// errLeftAlone is a user-data Secret the rewrite must not touch; its text
// says why, for logs and `mcs pki status`.
type errLeftAlone struct{ why string }

func (e *errLeftAlone) Error() string { return "left alone: " + e.why }

func leave(format string, a ...any) error { return &errLeftAlone{fmt.Sprintf(format, a...)} }

// userDataSecret is the part of a Secret the rewrite reads.
type userDataSecret struct {
	Name   string
	Labels map[string]string
	Data   map[string][]byte
}

// rewriteUserData is upstream's reconcileSecret: a pointer config in a
// Secret's userData whose single ignition.security.tls.certificateAuthorities
// entry is replaced by the bundle. It leaves alone what upstream leaves
// alone (the generated <pool>-user-data-managed Secrets, no userData, not
// JSON, no "ignition" object, no certificateAuthorities, more than one
// entry) and, where upstream would break or stop, also: an empty list
// (upstream panics), an entry whose source is not a data URL (a URL the
// admin serves the CA at) or that carries a verification hash (which a new
// source would fail). It returns nil bytes when nothing changes: the CA
// entry already holds exactly the bundle.
func rewriteUserData(s userDataSecret, bundlePEM []byte) ([]byte, error) {
	if _, ok := s.Labels[managedLabel]; ok {
		return nil, leave("generated from the bundle (label %s)", managedLabel)
	}
	raw, ok := s.Data[userDataKey]
	if !ok {
		return nil, leave("no %s", userDataKey)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, leave("%s is not JSON: %v", userDataKey, err)
	}
	entry, err := caEntry(doc)
	if err != nil {
		return nil, err
	}
	src, _ := entry["source"].(string)
	if !strings.HasPrefix(src, "data:") {
		return nil, leave("its CA source is not a data URL (%.40q): the admin serves it", src)
	}
	if _, ok := entry["verification"]; ok {
		return nil, leave("its CA entry has a verification hash, which a new bundle would fail")
	}
	if du, err := dataurl.DecodeString(src); err == nil && bytes.Equal(du.Data, bundlePEM) {
		return nil, nil
	}
	entry["source"] = dataurl.EncodeBytes(bundlePEM)
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("re-encoding %s: %w", s.Name, err)
	}
	return out, nil
}

// caEntry is the single ignition.security.tls.certificateAuthorities entry
// of a pointer config (the same path in spec 2.2 and 3.x).
func caEntry(doc map[string]any) (map[string]any, error) {
	ign, ok := doc["ignition"].(map[string]any)
	if !ok {
		return nil, leave("no ignition object: not an Ignition config")
	}
	sec, _ := ign["security"].(map[string]any)
	tls, _ := sec["tls"].(map[string]any)
	cas, ok := tls["certificateAuthorities"].([]any)
	switch {
	case !ok:
		return nil, leave("no ignition.security.tls.certificateAuthorities")
	case len(cas) == 0:
		return nil, leave("ignition.security.tls.certificateAuthorities is empty")
	case len(cas) > 1:
		return nil, leave("%d certificateAuthorities: additional CAs, not changed automatically", len(cas))
	}
	entry, ok := cas[0].(map[string]any)
	if !ok {
		return nil, leave("ignition.security.tls.certificateAuthorities.0 is not an object")
	}
	return entry, nil
}

// pointerOf is what a pointer config in a user-data Secret says: its
// spec, the CAs it trusts and the pool it fetches.
type pointerOf struct {
	Version string
	CAs     []*x509.Certificate
	// Firsts are the first certificate of each certificateAuthorities
	// entry: all that a boot image older than Ignition 2.4.0 reads.
	Firsts []*x509.Certificate
	Pool   string
}

// trusted is what the oldest boot image reading p's spec trusts: every CA
// for spec 3.2 and later, the first of each entry below (Ignition 2.4.0
// was the first to read a bundle; it reads up to 3.1, as 2.3.0 does).
func (p pointerOf) trusted() []*x509.Certificate {
	if v, err := semver.NewVersion(p.Version); err == nil && v.Major == 3 && v.Minor >= 2 {
		return p.CAs
	}
	return p.Firsts
}

// readPointer reads a user-data pointer config; CA sources that are not
// data URLs are not followed.
func readPointer(raw []byte) (pointerOf, error) {
	var doc struct {
		Ignition struct {
			Version string `json:"version"`
			Config  struct {
				Merge  []struct{ Source string } `json:"merge"`
				Append []struct{ Source string } `json:"append"`
			} `json:"config"`
			Security struct {
				TLS struct {
					CertificateAuthorities []struct{ Source string } `json:"certificateAuthorities"`
				} `json:"tls"`
			} `json:"security"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return pointerOf{}, err
	}
	ign := doc.Ignition
	if ign.Version == "" {
		return pointerOf{}, errors.New("no ignition.version")
	}
	p := pointerOf{Version: ign.Version}
	for _, src := range append(ign.Config.Merge, ign.Config.Append...) {
		if i := strings.LastIndex(src.Source, "/config/"); i >= 0 {
			p.Pool = src.Source[i+len("/config/"):]
		}
	}
	for _, ca := range ign.Security.TLS.CertificateAuthorities {
		du, err := dataurl.DecodeString(ca.Source)
		if err != nil {
			continue
		}
		certs, err := parseCerts(du.Data)
		if err != nil {
			return p, fmt.Errorf("ignition.security.tls.certificateAuthorities: %w", err)
		}
		p.CAs = append(p.CAs, certs...)
		if len(certs) > 0 {
			p.Firsts = append(p.Firsts, certs[0])
		}
	}
	return p, nil
}
