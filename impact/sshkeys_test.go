package impact

import (
	"strings"
	"testing"
)

// TestSSHKeyName: a key is shown as ssh-keygen -l shows it (the
// fingerprints below are ssh-keygen's), never whole.
func TestSSHKeyName(t *testing.T) {
	const ed = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBnAaVpVGi7OxQPy7Qs8Hr4qataQsxJLJbRqKqKmbTNI"
	const rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDCqwipg8Lw3ku9xbcK6Ar9MIAORnEcr8bPvVH8e0tsxT0sU1g0QZt+hO+tbZ6XfiHLVOwjAbYRsYp46LKGRVGxp7yPvaC8YGrtv8vChmnrCR1wsvj5n3BMl2XUCdp85P0N20+FIRNsTQ1UiLmRAWJ6nZIa+TU3/SVIYfifMsDhp/iNVQFJ8mGNxb+m83hILlIEZItQyrNjYRjl3U9uJWLJezwu4Sdl8/Vr7rsN1TkWtH0V1ksVN10u3Bu4WWz8gXPJpnONvXeTCFqnerfJrTcixaWPbKLmPfxaWRvVvy2DlR4VQYrIjyLRsJJmSsqR2zVhneeQ+S5UCGemaEcdXT8l"
	for _, tc := range []struct{ name, line, want string }{
		{"comment", ed + " admin@bastion", "ssh-ed25519 SHA256:0C7D0Z8bZwBjnZJYBDbNgh8nC5+juCphe/vLZoQR2kY admin@bastion"},
		{"comment with spaces", ed + " the admin key", "ssh-ed25519 SHA256:0C7D0Z8bZwBjnZJYBDbNgh8nC5+juCphe/vLZoQR2kY the admin key"},
		{"options", "no-pty,from=\"10.0.0.1\" " + ed + " admin@bastion", "ssh-ed25519 SHA256:0C7D0Z8bZwBjnZJYBDbNgh8nC5+juCphe/vLZoQR2kY admin@bastion"},
		{"no comment", rsa, "ssh-rsa SHA256:lCnZf0hmYzDMvVvUKYIt0F/xuvlUaknmH4xxnajqSCk"},
		{"not a key", "hello world", "(not a key) 11 bytes sha256:b94d27b9934d"},
		{"bad base64", "ssh-rsa !!!! x", "(not a key) 14 bytes sha256:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sshKeyName(tc.line)
			if !strings.HasPrefix(got, tc.want) || (!strings.HasPrefix(tc.want, "(not") && got != tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "AAAA") {
				t.Errorf("%q shows the key", got)
			}
		})
	}
}
