package nodefail

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/ignition-mcs/mcs/internal/text"
)

// errorMax is how much of a report's error message is kept, after
// redaction: as machine-config-operator PR #6124 cuts it.
const errorMax = 200

// redacted stands for what was removed.
const redacted = "[REDACTED]"

// secrets are the credentials an error from pulling an image or calling
// an API can hold, each with the part kept (group 1) before what is
// redacted. Order matters: whole headers before their words.
var secrets = []*regexp.Regexp{
	// userinfo in a URL: https://user:pass@host, docker://tok@host
	regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^/\s@"']+@`),
	// HTTP authorization headers, to the end of the line
	regexp.MustCompile(`(?i)((?:proxy-)?authorization["']?\s*[:=]\s*)[^\r\n]+`),
	// a bearer or basic credential wherever it stands
	regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+)[a-z0-9._~+/=-]+`),
	// JSON or YAML fields of a pull secret or a config: "auth": "...",
	// "password": "...", identitytoken, registrytoken, token, secret
	regexp.MustCompile(`(?i)("(?:auth|password|passwd|identitytoken|registrytoken|token|access_token|refresh_token|secret|client_secret|apikey|api_key|credentials?)"\s*:\s*")[^"]*`),
	// key=value and key: value in query strings, flags and logs
	regexp.MustCompile(`(?i)(\b(?:auth|password|passwd|pass|pwd|token|access_token|refresh_token|secret|client_secret|apikey|api_key|key|credentials?|sig|signature|x-amz-signature|x-amz-credential)\s*[=:]\s*)[^\s&"',;]+`),
	// OpenShift OAuth tokens, and JSON web tokens (service accounts)
	regexp.MustCompile(`()\bsha256~[A-Za-z0-9_-]+`),
	regexp.MustCompile(`()\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`),
	// a base64 blob (a pull secret's .dockerconfigjson, a robot token),
	// when blob says so
	regexp.MustCompile(`()[A-Za-z0-9+/_=-]{32,}`),
}

// blob reports whether a run of 32 or more base64 characters is a secret:
// it mixes digits with upper-case letters (or base64's +, / or =), as
// encoded credentials and tokens do, and is not hex (an image digest).
// Paths and unit names (lower case, hyphens) are kept.
func blob(s string) bool {
	digit, upper, b64, hex := false, false, false, true
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c == '+' || c == '/' || c == '=':
			b64 = true
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			hex = false
		}
	}
	return digit && (upper || b64) && !hex
}

// redact removes credentials and registry secrets from s: userinfo in
// URLs, authorization headers, bearer and basic credentials, pull-secret
// and token fields, key=value secrets, OAuth and service-account tokens
// and long base64 blobs. What is removed reads [REDACTED].
func redact(s string) string {
	for i, re := range secrets {
		last := i == len(secrets)-1
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			if last && !blob(m) {
				return m
			}
			sub := re.FindStringSubmatch(m)
			return sub[1] + redacted
		})
	}
	return s
}

// errorText is a report's error as an Event shows it: redacted, then cut
// to errorMax characters, control characters made spaces.
func errorText(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return "unknown error"
	}
	msg = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, redact(msg))
	if n := len([]rune(msg)); n > errorMax {
		msg = string([]rune(msg)[:errorMax]) + "... (truncated)"
	}
	return msg
}

// imageText is the registry of a report's image, as the PR shows it:
// the host only (no credentials, repository or tag), "internal-registry"
// for OpenShift's own, "none" or "invalid-url".
func imageText(image string) string {
	if image == "" {
		return "none"
	}
	raw := image
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "invalid-url"
	}
	if strings.Contains(u.Host, "image-registry.openshift-image-registry") {
		return "internal-registry"
	}
	return text.Truncate(u.Host, 253, "")
}
