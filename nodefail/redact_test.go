package nodefail

import (
	"strings"
	"testing"
)

// The redaction corpus: each secret issue 43 found leaking past redact,
// with variants of it, and what must stay readable beside it.
var redactCorpus = []struct {
	name, in string
	gone     []string // none of these may be left, nor any 6 characters of them
	kept     []string
}{
	// URLs with userinfo in any form.
	{"userinfo with slash and plus", "proxyconnect tcp: http://user:ab/cd+ef@proxy.corp:3128 refused", []string{"ab/cd+ef", "user:"}, []string{"proxy.corp:3128 refused"}},
	{"userinfo with at sign", "https://robot:p@ss@w0rd@quay.io/x", []string{"p@ss@w0rd"}, []string{"@quay.io/x"}},
	{"userinfo with colon", "https://u:a:b:cPass@registry:5000/img", []string{"a:b:cPass"}, []string{"registry:5000/img"}},
	{"userinfo percent-encoded", "https://u%40corp:S3cr%2Fet@h.example/x", []string{"S3cr%2Fet", "u%40corp"}, []string{"h.example/x"}},
	{"userinfo token only", "docker://tok3nAbCdEf@registry.example.com/x", []string{"tok3nAbCdEf"}, []string{"registry.example.com/x"}},
	{"userinfo after key=", "HTTPS_PROXY=http://user:pr0xyPass@10.0.0.1:3128", []string{"pr0xyPass"}, []string{"HTTPS_PROXY=", "10.0.0.1:3128"}},
	{"userinfo in quotes", `proxy "http://admin:qu0tedPw@proxy:8080" failed`, []string{"qu0tedPw"}, []string{"proxy:8080"}},
	{"userinfo escaped quotes", `{\"httpProxy\":\"http://admin:escPw99@proxy:8080\"}`, []string{"escPw99"}, []string{`proxy:8080\"`}},
	{"userinfo ipv6 host", "http://u:v6Passw0rd@[fd00::1]:3128/", []string{"v6Passw0rd"}, []string{"[fd00::1]:3128"}},
	// user:pass@host without a scheme.
	{"proxy without scheme", "using proxy user:Hunter2Pass@proxy.corp:3128 for quay.io", []string{"Hunter2Pass"}, []string{"proxy.corp:3128 for quay.io"}},
	{"proxy after =", "no_proxy=x https_proxy=user:Hunter2Pass@proxy.corp:3128", []string{"Hunter2Pass"}, []string{"https_proxy=", "proxy.corp:3128"}},
	{"proxy password with slash", "(user:Hu/nter+2@proxy.corp:3128)", []string{"Hu/nter+2"}, []string{"proxy.corp:3128)"}},
	// quoted values, spaces and all.
	{"password double quotes", `login: password="hunter two" user=admin`, []string{"hunter two", "hunter"}, []string{"user=admin"}},
	{"password single quotes", `login: password='hunter two three'`, []string{"hunter two three"}, []string{"login:"}},
	{"password yaml", `password: "hunter two"`, []string{"hunter two"}, nil},
	{"suffixed name", `DB_PASSWORD="correct horse" proxyPassword=battery9Staple`, []string{"correct horse", "battery9Staple"}, []string{"DB_PASSWORD="}},
	{"escaped quoted value", `cmd: \"password=\\\"spaced secret\\\"\"`, []string{"spaced secret"}, nil},
	{"escaped quote inside a JSON value", `{"password": "a\"b c"}`, []string{`\"b c`, "b c"}, []string{`{"password": "`}},
	{"escaped quote inside a quoted value", `password="x\"secret two"`, []string{"secret two"}, nil},
	{"curly single quotes", `password=’hunter two’ done`, []string{"hunter two", "hunter"}, []string{"done"}},
	{"curly double quotes", `password=“hunter two” done`, []string{"hunter two", "hunter"}, []string{"done"}},
	{"percent-encoded =", `GET /v2/token?scope=x&token%3DT0kenPercent99 failed`, []string{"T0kenPercent99"}, []string{"failed"}},
	// pull-secret JSON in any escaping.
	{"pull secret", `{"auths":{"quay.io":{"auth":"cm9ib3Q6cGFzc3dvcmQ=","email":"a@b.c"}}}`, []string{"cm9ib3Q6cGFzc3dvcmQ"}, []string{`"email":"a@b.c"`}},
	{"pull secret escaped", `error: {\"auths\":{\"quay.io\":{\"auth\":\"cm9ib3Q6cGFzc3dvcmQ=\"}}}`, []string{"cm9ib3Q6cGFzc3dvcmQ"}, []string{`\"auths\"`}},
	{"pull secret twice escaped", `"{\\\"auths\\\":{\\\"quay.io\\\":{\\\"auth\\\":\\\"c2hvcnQ6cHc=\\\"}}}"`, []string{"c2hvcnQ6cHc"}, []string{"quay.io"}},
	{"pull secret unicode quotes", `{\u0022auths\u0022:{\u0022r\u0022:{\u0022auth\u0022:\u0022dTpwYXNzd2Q=\u0022}}}`, []string{"dTpwYXNzd2Q"}, nil},
	{"pull secret password field", `{\"username\":\"robot\",\"password\":\"pa ss w0rd\"}`, []string{"pa ss w0rd"}, []string{`\"username\":\"robot\"`}},
	{"identitytoken", `"identitytoken": "IDT0Kxyz"`, []string{"IDT0Kxyz"}, []string{"identitytoken"}},
	// PEM blocks, whole or cut.
	{"pem", "key: -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx7\nabcdef\n-----END RSA PRIVATE KEY----- done", []string{"MIIEpAIBAAKCAQEAx7", "abcdef"}, []string{"done", "BEGIN RSA PRIVATE KEY"}},
	{"pem escaped newlines", `-----BEGIN PRIVATE KEY-----\nMIIBVgIBADANBgkq\n-----END PRIVATE KEY-----`, []string{"MIIBVgIBADANBgkq"}, nil},
	{"pem cut short", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVW", []string{"MHcCAQEEIBkg4LVW"}, nil},
	// no partial leaks.
	{"partial leak", "https://user:Pa/ssW0rd@registry.example.com/v2/", []string{"Pa/ssW0rd", "ssW0rd"}, []string{"registry.example.com/v2/"}},
	{"partial leak key in userinfo", "https://pass:ssW0rd@host.example/", []string{"ssW0rd"}, []string{"host.example/"}},
	{"header escaped line", `Authorization: Basic dXNlcjpwYXNz\nnext`, []string{"dXNlcjpwYXNz"}, []string{`\nnext`}},
	{"bearer", "401 with Bearer abc.DEF-ghi_123 sent", []string{"abc.DEF-ghi_123"}, []string{"401 with Bearer"}},
}

func TestRedactCorpus(t *testing.T) {
	for _, c := range redactCorpus {
		t.Run(c.name, func(t *testing.T) {
			got := redact(c.in)
			if leak := leaked(got, c.in, c.gone); leak != "" {
				t.Errorf("redact(%q) = %q: leaks %q", c.in, got, leak)
			}
			for _, k := range c.kept {
				if !strings.Contains(got, k) {
					t.Errorf("redact(%q) = %q: lost %q", c.in, got, k)
				}
			}
			if again := redact(got); again != got {
				t.Errorf("redact not idempotent: %q then %q", got, again)
			}
		})
	}
	// What helps an admin stays: digests, tagged images, logins, paths,
	// addresses, unit names.
	for _, keep := range []string{
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:4f7c2a1b9e0d8c6f5a3b2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b",
		"docker://registry:5000/ns/img:4.14@sha256:0123abcd",
		"quay.io/ns/img:v4.14@sha256:0123abcd",
		"git@github.com:openshift/mco.git",
		"dial tcp 10.0.0.1:443: connect: connection refused",
		"error running systemd-run --unit machine-config-daemon-update-rpmostree-via-container",
		"/etc/machine-config-daemon/node-annotations.json",
		"mail admin@example.com",
	} {
		if got := redact(keep); got != keep {
			t.Errorf("redact(%q) = %q", keep, got)
		}
	}
}

// leaked is the first of secrets, or of their 6-character pieces, left in
// out; "" when none.
func leaked(out, in string, secrets []string) string {
	for _, s := range secrets {
		if strings.Contains(out, s) {
			return s
		}
		for i := 0; i+6 <= len(s); i++ {
			if p := s[i : i+6]; strings.Contains(out, p) && strings.Count(in, p) > strings.Count(s, p) {
				continue // the piece is in the message apart from the secret
			} else if strings.Contains(out, p) && !strings.Contains(redacted, p) {
				return p
			}
		}
	}
	return ""
}

// plantings are the forms a secret takes in a message, %s the secret.
var plantings = []string{
	"https://user:%s@proxy.corp:3128/x",
	"http://user:ab/%s@proxy",
	"docker://%s@registry.example.com/x",
	"user:%s@proxy.corp:3128",
	"HTTPS_PROXY=http://u:%s@10.0.0.1:3128",
	`password="%s two"`,
	`password='%s two'`,
	"password=%s",
	"token: %s",
	`{"auths":{"quay.io":{"auth":"%s"}}}`,
	`{\"auths\":{\"quay.io\":{\"auth\":\"%s\"}}}`,
	`{\\\"auths\\\":{\\\"quay.io\\\":{\\\"auth\\\":\\\"%s\\\"}}}`,
	"Authorization: Bearer %s",
	"-----BEGIN RSA PRIVATE KEY-----\n%s\n-----END RSA PRIVATE KEY-----",
}

// secretOf maps fuzz bytes onto a secret of 8 to 40 characters a password
// may hold.
func secretOf(b []byte) string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789+/_-.~!"
	out := []byte("Zq")
	for _, c := range b {
		if len(out) == 40 {
			break
		}
		out = append(out, alphabet[int(c)%len(alphabet)])
	}
	for len(out) < 8 {
		out = append(out, '7')
	}
	return string(out)
}

// Redaction is idempotent and never leaks a planted secret, whatever
// stands around it (a blank apart: a secret run into the words before it
// is another secret).
func FuzzRedactPlanted(f *testing.F) {
	f.Add("pull failed:", []byte("Hunter2Pass"), uint8(0), "refused")
	f.Add("", []byte("ab/cd+ef"), uint8(1), "")
	f.Add(`{"a":"`, []byte("x"), uint8(10), `"}`)
	f.Fuzz(func(t *testing.T, before string, raw []byte, form uint8, after string) {
		secret := secretOf(raw)
		planted := strings.Replace(plantings[int(form)%len(plantings)], "%s", secret, 1)
		in := before + " " + planted + "\n" + after
		out := redact(in)
		if again := redact(out); again != out {
			t.Fatalf("not idempotent on %q: %q then %q", in, out, again)
		}
		if strings.Contains(before+after, secret[:6]) {
			return // the secret is also in the words around it
		}
		if leak := leaked(out, in, []string{secret}); leak != "" {
			t.Fatalf("redact(%q) = %q: leaks %q of %q", in, out, leak, secret)
		}
	})
}
