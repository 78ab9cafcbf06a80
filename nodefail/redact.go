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

// A rule finds secrets: group 1 of each match of re is redacted, the rest
// of the match kept, unless keep says the match is no secret after all.
type rule struct {
	re   *regexp.Regexp
	keep func(s string, loc []int) bool
}

// q is a quote as a JSON string holds it at any depth of escaping: ",
// \", \\\", …, \u0022 or an HTML entity.
const q = `(?:\\*"|\\+u0022|&quot;)`

// sep is what stands between a secret's name and its value: = or :, also
// percent-encoded (a query string quoted in a URL).
const sep = `(?:[=:]|%3[dDaA])`

// Words that name a secret in key=value, key: value and JSON fields.
// Those of secretWords also name one as the end of a longer name
// (db_password, proxyPassword, X-Registry-Token); exactWords only alone.
const (
	secretWords = `password|passwd|passphrase|secret|token|apikey|api_key|api-key|credentials?|auth`
	exactWords  = `pass|pwd|key|sig|signature|x-amz-signature|x-amz-credential|private_key`
	keyName     = `(?:[a-z0-9_.-]*(?:` + secretWords + `)|\b(?:` + exactWords + `))`
)

// rules are the credentials an error from pulling an image or calling an
// API can hold. Order matters: whole blocks and headers before their
// words, URLs before key=value; redact applies them until nothing changes.
var rules = []rule{
	// PEM blocks, to their END line or, cut short, to the end.
	{re: regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*-----(.*?)(?:-----END [A-Z0-9 ]*-----|$)`)},
	// HTTP authorization headers, to the end of the line (or of an
	// escaped line: \n as two characters).
	{re: regexp.MustCompile(`(?i)(?:proxy-)?authorization` + q + `?\s*[:=]\s*((?:[^\r\n\\]|\\[^n])+)`)},
	// a bearer or basic credential wherever it stands
	{re: regexp.MustCompile(`(?i)\b(?:bearer|basic)\s+([a-z0-9._~+/=-]+)`)},
	// JSON fields and quoted values unescaped (a JSON document as it is):
	// a \" inside the value is part of it, not its end.
	{re: regexp.MustCompile(`(?i)"(?:[a-z0-9_.-]*(?:` + secretWords + `)|identitytoken|registrytoken)"\s*:\s*"((?:[^"\\]|\\.)*)"`)},
	{re: regexp.MustCompile(`(?i)` + keyName + `\s*` + sep + `\s*"((?:[^"\\]|\\.)*)"`)},
	// JSON fields, quoted at any depth: "auth":"…", \"password\":\"…\"
	{re: regexp.MustCompile(`(?i)` + q + `(?:[a-z0-9_.-]*(?:` + secretWords + `)|identitytoken|registrytoken)` + q + `\s*:\s*` + q + `(.*?)` + q)},
	// key="quoted value", key='quoted value', spaces and all
	{re: regexp.MustCompile(`(?i)` + keyName + `\s*` + sep + `\s*` + q + `(.*?)` + q)},
	{re: regexp.MustCompile(`(?i)` + keyName + `\s*` + sep + `\s*['‘’]([^'‘’]*)['‘’]`)},
	{re: regexp.MustCompile(`(?i)` + keyName + `\s*` + sep + `\s*[“”]([^“”]*)[“”]`)},
	// key=value and key: value in query strings, flags and logs
	{re: regexp.MustCompile(`(?i)` + keyName + `\s*` + sep + `\s*([^\s&"'‘’“”,;\\]+)`), keep: isRedacted},
	// OpenShift OAuth tokens, and JSON web tokens (service accounts)
	{re: regexp.MustCompile(`\b(sha256~[A-Za-z0-9_-]+)`)},
	{re: regexp.MustCompile(`\b(eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)`)},
	// a base64 blob (a pull secret's .dockerconfigjson, a robot token),
	// when blob says so
	{re: regexp.MustCompile(`([A-Za-z0-9+/_=-]{32,})`), keep: func(s string, loc []int) bool { return !blob(s[loc[2]:loc[3]]) }},
}

// isRedacted keeps a value that is already [REDACTED], or a PEM block's
// first line (key: -----BEGIN …), redacted by its own rule.
func isRedacted(s string, loc []int) bool {
	v := s[loc[2]:loc[3]]
	return v == redacted || strings.HasPrefix(v, "-----")
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
	return digit && (upper || b64) && !hex && !strings.Contains(s, "REDACTED")
}

// redactPassesMax bounds the passes of redact: each pass only replaces
// what is not yet [REDACTED], so it settles in one or two.
const redactPassesMax = 8

// redact removes credentials and registry secrets from s: userinfo in
// URLs (with or without a scheme), PEM blocks, authorization headers,
// bearer and basic credentials, pull-secret and token fields at any depth
// of JSON escaping, quoted and bare key=value secrets, OAuth and
// service-account tokens and long base64 blobs. What is removed reads
// [REDACTED]; redact(redact(s)) is redact(s).
func redact(s string) string {
	for range redactPassesMax {
		next := redactUserinfo(s)
		for _, r := range rules {
			next = r.apply(next)
		}
		if next == s {
			break
		}
		s = next
	}
	return s
}

// apply redacts group 1 of each match of r in s.
func (r rule) apply(s string) string {
	locs := r.re.FindAllStringSubmatchIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		if loc[2] < 0 || loc[2] == loc[3] || s[loc[2]:loc[3]] == redacted || r.keep != nil && r.keep(s, loc) {
			continue
		}
		b.WriteString(s[last:loc[2]])
		b.WriteString(redacted)
		last = loc[3]
	}
	b.WriteString(s[last:])
	return b.String()
}

// urlRun is a run of characters a URL or a user:password@host can span in
// a message: up to a blank, a quote, a backslash (an escaped quote or
// newline), an angle bracket or a backtick.
var urlRun = regexp.MustCompile(`[^\s"'\\<>` + "`" + `]+`)

// scheme finds where a URL's authority begins: after scheme://.
var scheme = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://`)

// redactUserinfo redacts the userinfo of URLs, https://user:pass@host, and
// of user:pass@host without a scheme (a proxy setting): everything from
// the authority's start to the run's last '@' that is not an image
// digest's, so that a password holding '/', ':' or '@' goes whole. A run
// with no scheme needs a user name before a ':' (no '/' or '@' in it:
// quay.io/ns/img:tag@sha256 is an image, git@github.com a login name).
func redactUserinfo(s string) string {
	var b strings.Builder
	last := 0
	for _, loc := range urlRun.FindAllStringIndex(s, -1) {
		run := s[loc[0]:loc[1]]
		start := authorityStart(run)
		if start < 0 {
			continue
		}
		at := userinfoEnd(run, start)
		if at <= start || run[start:at] == redacted {
			continue
		}
		b.WriteString(s[last : loc[0]+start])
		b.WriteString(redacted)
		last = loc[0] + at
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// authorityStart is where userinfo would begin in run: after its first
// scheme://, else after the last of =([{,; before its first ':' when a
// user name stands there; -1 when neither.
func authorityStart(run string) int {
	if m := scheme.FindStringIndex(run); m != nil {
		return m[1]
	}
	colon := strings.IndexByte(run, ':')
	if colon < 0 {
		return -1
	}
	start := strings.LastIndexAny(run[:colon], "=([{,;") + 1
	if start == colon || strings.ContainsAny(run[start:colon], "/@") {
		return -1
	}
	return start
}

// digestAfter finds an image digest's algorithm, as after repo@.
var digestAfter = regexp.MustCompile(`^(?i)(?:sha256|sha384|sha512):`)

// userinfoEnd is the index in run of the last '@' after start that a host
// follows (not an image digest), or -1.
func userinfoEnd(run string, start int) int {
	for at := len(run) - 1; at > start; at-- {
		if run[at] == '@' && at+1 < len(run) && !digestAfter.MatchString(run[at+1:]) {
			return at
		}
	}
	return -1
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
