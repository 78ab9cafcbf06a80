package impact

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/ignition-mcs/mcs/render"
)

// sshKeyTypes are the key types an authorized_keys line may name; what
// comes before the type (options) is skipped.
var sshKeyTypes = []string{"ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-sha2-"}

// sshKeys are every user's authorized keys, one thing per key, named
// "core: ssh-ed25519 SHA256:… comment" as ssh-keygen -l shows a key:
// never the key itself, and one key's change is not its user's.
func sshKeys(t map[string]any) set {
	out := set{}
	for user, l := range items(t, []string{"passwd", "users"}, "name") {
		for k, v := range l {
			if s, ok := v.(string); ok && strings.HasPrefix(k, "sshAuthorizedKeys[") {
				out[user+": "+sshKeyName(s)] = leaves{}
			}
		}
	}
	return out
}

// sshKeyName is a key's type, SHA-256 fingerprint (unpadded base64 of the
// SHA-256 of the key blob, as ssh-keygen prints it) and comment; a line
// that is no key is named by the digest of its text.
func sshKeyName(line string) string {
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if !hasAnyPrefix(f[i], sshKeyTypes) {
			continue
		}
		blob, err := base64.StdEncoding.DecodeString(f[i+1])
		if err != nil {
			break
		}
		sum := sha256.Sum256(blob)
		return strings.TrimSpace(f[i] + " SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]) + " " + strings.Join(f[i+2:], " "))
	}
	return "(not a key) " + digest(line).String()
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// withoutSSHKeys drops the users' authorized keys, which sshKeys compares
// one by one.
func withoutSSHKeys(users set) set {
	for _, l := range users {
		for k := range l {
			if strings.HasPrefix(k, "sshAuthorizedKeys[") {
				delete(l, k)
			}
		}
	}
	return users
}

// compareSSHKeys lists the keys added and removed, each credited to the
// last MachineConfig in merge order that authorizes it.
func (c *comparison) compareSSHKeys(ot, nt map[string]any, o, n *render.Result) []*Change {
	out := c.compareSet("sshKeys", sshKeys(ot), sshKeys(nt), o, n, func(mc *render.MachineConfig, name string) ([]string, bool) {
		user, _, _ := strings.Cut(name, ": ")
		_, ok := sshKeys(tree(mc.Spec.Config))[name]
		return []string{"spec", "config", "passwd", "users", "?name=" + user, "sshAuthorizedKeys"}, ok
	})
	for _, ch := range out {
		side := c.new
		if ch.Op == Removed {
			side = c.old
		}
		if mc := side.mcs[ch.MachineConfig]; mc != nil && ch.Local == "" {
			user, _, _ := strings.Cut(ch.Name, ": ")
			ch.Local = mc.Locals["users "+user]
		}
	}
	return out
}
