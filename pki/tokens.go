package pki

import (
	"crypto/rand"
	"encoding/base64"
	"time"
)

// Pool token Secrets: one per pool, in mcoNamespace, labelled with the pool.
const (
	tokenLabel         = "mcs.openshift.io/pool-token" // value: the pool
	tokenKey           = "token"
	previousKey        = "previous"
	rotatedAnnotation  = "mcs.openshift.io/token-rotated-at"
	previousAnnotation = "mcs.openshift.io/previous-token-valid-until"
)

// tokenSecretName is the Secret holding pool's token.
func tokenSecretName(pool string) string { return "mcs-pool-token-" + pool }

// TokenPolicy says how often a pool's token is replaced and how long the
// one it replaces keeps working. HyperShift's ignition server: 5.5 hours
// and 2 hours.
type TokenPolicy struct {
	Rotation, Grace time.Duration
}

// poolToken is a pool's token Secret's content.
type poolToken struct {
	Token, Previous string
	RotatedAt       time.Time
	PreviousUntil   time.Time
}

// rotateToken is t after now: a first token, or a new one once the
// rotation period has passed (the old one kept until the grace ends), and
// the previous one dropped once its grace has ended. changed reports
// whether anything did.
func rotateToken(t poolToken, now time.Time, p TokenPolicy) (next poolToken, changed bool) {
	next = t
	if next.Previous != "" && !now.Before(next.PreviousUntil) {
		next.Previous, next.PreviousUntil, changed = "", time.Time{}, true
	}
	if next.Token == "" || !now.Before(next.RotatedAt.Add(p.Rotation)) {
		if next.Token != "" {
			next.Previous, next.PreviousUntil = next.Token, now.Add(p.Grace)
		}
		next.Token, next.RotatedAt, changed = newToken(), now, true
	}
	return next, changed
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand does not fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// accepted is the tokens of t that work at now.
func (t poolToken) accepted(now time.Time) []string {
	out := []string{}
	if t.Token != "" {
		out = append(out, t.Token)
	}
	if t.Previous != "" && now.Before(t.PreviousUntil) {
		out = append(out, t.Previous)
	}
	return out
}
