package tlsnames

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"

	configv1 "github.com/openshift/api/config/v1"
	"sigs.k8s.io/yaml"
)

// Config is the TLS configuration of a lowest version and suite names
// (already read by Suites); without names, Intermediate's suites.
func Config(minVersion uint16, names []string) *tls.Config {
	ids, _ := Suites(names) // checked as parsed
	if len(ids) == 0 {
		ids = Intermediate()
	}
	return &tls.Config{MinVersion: minVersion, CipherSuites: ids}
}

// APIServerProfile is the TLS profile of an APIServer manifest (the
// installer's api-server.yaml), as upstream's bootstrap server reads it:
// its lowest version and the suite names Go has (upstream's
// OpenSSLToIANACipherSuites leaves the others out too); Intermediate
// without a profile. found is false, with no error, when there is no
// file.
func APIServerProfile(path string) (minVersion uint16, names []string, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	var api configv1.APIServer
	if err := yaml.Unmarshal(b, &api); err != nil {
		return 0, nil, false, fmt.Errorf("%s: %w", path, err)
	}
	spec := configv1.TLSProfiles[configv1.TLSProfileIntermediateType]
	if p := api.Spec.TLSSecurityProfile; p != nil {
		switch {
		case p.Type == configv1.TLSProfileCustomType && p.Custom != nil:
			spec = &p.Custom.TLSProfileSpec
		case configv1.TLSProfiles[p.Type] != nil:
			spec = configv1.TLSProfiles[p.Type]
		}
	}
	v, err := Version(string(spec.MinTLSVersion))
	if err != nil {
		return 0, nil, false, fmt.Errorf("%s: $.spec.tlsSecurityProfile: %w", path, err)
	}
	for _, c := range spec.Ciphers {
		if _, ok := suite(c); ok {
			names = append(names, c)
		}
	}
	return v, names, true, nil
}
