package pki

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/coreos/go-semver/semver"
	"github.com/vincent-petithory/dataurl"
)

// securePort is the machine-config-server's TLS port, which pointer
// configs fetch from.
const securePort = 22623

// pointerPlan is a generated pointer config and what a reader should know
// about it.
type pointerPlan struct {
	Config  []byte
	Version string
	// Note says what it could not carry (a token a spec-3.0 or 2.2 boot
	// image cannot send), or "".
	Note string
}

// pointerConfig writes the pointer config of pool: fetch
// https://host:22623/config/<pool> trusting bundle, with token as a bearer
// header when there is one. Its spec is the lowest that carries it (3.0.0,
// or 3.1.0 with httpHeaders) and never above ceiling, the spec of the
// pool's own user-data Secret, which is what its boot image reads
// (upstream writes the newest spec it knows, which older boot images
// cannot parse). A ceiling of 2.x gets a spec-2.2 pointer.
func pointerConfig(host, pool string, bundle []byte, token, ceiling string) (pointerPlan, error) {
	url := fmt.Sprintf("https://%s/config/%s", host, pool)
	ca := []any{map[string]any{"source": dataurl.EncodeBytes(bundle)}}
	security := map[string]any{"tls": map[string]any{"certificateAuthorities": ca}}
	var max *semver.Version
	if ceiling != "" {
		v, err := semver.NewVersion(ceiling)
		if err != nil {
			return pointerPlan{}, fmt.Errorf("the boot image's spec %q: %w", ceiling, err)
		}
		max = v
	}
	if max != nil && max.Major == 2 {
		if max.Minor < 2 {
			return pointerPlan{}, fmt.Errorf("the boot image reads spec %s, which cannot carry a CA (2.2 can)", ceiling)
		}
		p := pointerPlan{Version: "2.2.0"}
		if token != "" {
			p.Note = "a spec-2 boot image cannot send a token: this pool's nodes need a token-less entry in --auth-token-file"
		}
		ign := map[string]any{"version": p.Version, "config": map[string]any{"append": []any{map[string]any{"source": url}}}, "security": security}
		b, err := json.Marshal(map[string]any{"ignition": ign})
		p.Config = b
		return p, err
	}
	p := pointerPlan{Version: "3.0.0"}
	src := map[string]any{"source": url}
	if token != "" {
		if max != nil && max.Major == 3 && max.Minor == 0 {
			p.Note = "the boot image reads spec 3.0.0, which cannot carry a token (3.1.0 can): this pool's nodes need a token-less entry in --auth-token-file"
		} else {
			p.Version = "3.1.0"
			src["httpHeaders"] = []any{map[string]any{"name": "Authorization", "value": "Bearer " + token}}
		}
	}
	ign := map[string]any{"version": p.Version, "config": map[string]any{"merge": []any{src}}, "security": security}
	b, err := json.Marshal(map[string]any{"ignition": ign})
	p.Config = b
	return p, err
}

// ignitionHost is where pointer configs fetch from, as upstream's
// getIgnitionHost: the api-int host name, or on platforms with API VIPs
// the first internal IP.
func ignitionHost(apiIntURL string, internalIPs []string) (string, error) {
	host := hostOf(apiIntURL)
	if len(internalIPs) > 0 {
		host = internalIPs[0]
	}
	if host == "" {
		return "", fmt.Errorf("no api-int host in the Infrastructure (status.apiServerInternalURI %q)", apiIntURL)
	}
	return net.JoinHostPort(host, strconv.Itoa(securePort)), nil
}

func hostOf(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		rest = u
	}
	rest, _, _ = strings.Cut(rest, "/")
	if h, _, err := net.SplitHostPort(rest); err == nil {
		return h
	}
	return strings.Trim(rest, "[]")
}
