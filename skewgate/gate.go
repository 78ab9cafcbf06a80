// Package skewgate decides whether a booting node may join, and when it may not, builds the config that tells it why on its console.
package skewgate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ignition-mcs/mcs/convert"

	"github.com/ignition-mcs/mcs/internal/text"
)

// Reasons are bounded: they are metric label values.
const (
	reasonOK              = "ok"
	reasonEnforcementOff  = "enforcement-off"
	reasonBootImageOld    = "boot-image-too-old"
	reasonIgnitionOld     = "ignition-too-old"
	ReasonSpecUnreadable  = "spec-unreadable"
	reasonAutomaticManage = "automatic"
)

// Request is what the gate knows about one config request.
type Request struct {
	Pool       string
	UserAgent  string
	RemoteAddr string
	// ClientSpec is the newest spec the client reads (from Accept); zero when
	// the client named none (curl).
	ClientSpec convert.Version
	// Servable is false when no spec the client reads can express the pool's
	// config; NeededSpec and Fields then say what it would need and why.
	Servable   bool
	NeededSpec convert.Version
	Fields     []convert.Reason
}

// Decision is Admit, or a stub with a reason and a message for the node.
type Decision struct {
	Admit   bool
	Reason  string // one of the Reason* constants
	Message string // for /etc/issue.d; empty when admitted
	ID      string // reference id, in the message and the server log
}

// Blocked is a stubbed request, kept for /status.
type Blocked struct {
	Time       time.Time `json:"time"`
	Pool       string    `json:"pool"`
	Reason     string    `json:"reason"`
	ID         string    `json:"id"`
	Client     string    `json:"client"`
	RemoteAddr string    `json:"remoteAddr"`
}

// recentMax bounds the blocked-request history /status shows.
const recentMax = 20

// Gate applies a policy, which can be replaced while serving.
type Gate struct {
	policy atomic.Pointer[Policy]
	log    *slog.Logger

	mu     sync.Mutex
	recent []Blocked
	stubs  map[string][]byte // (id, spec) → stub body; bounded by the bounded reasons × pools × specs
}

// New returns a gate; p may be nil (only the always-on rule applies).
func New(p *Policy, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gate{log: log, stubs: map[string][]byte{}}
	g.SetPolicy(p)
	return g
}

// SetPolicy replaces the policy; nil means none.
func (g *Gate) SetPolicy(p *Policy) {
	if p == nil {
		p = &Policy{}
		_ = p.validate(nil)
	}
	g.policy.Store(p)
}

// Policy returns the policy in force.
func (g *Gate) Policy() *Policy { return g.policy.Load() }

// Decide applies, in order: a client that cannot read any spec able to
// express its config is stubbed (always: serving it would make it fail
// obscurely, or drop fields silently); mode None admits; a recorded boot
// image older than the release limit is stubbed; a client Ignition older than
// the pool's minimum is stubbed.
func (g *Gate) Decide(r Request) Decision {
	p := g.policy.Load()
	client, known := ParseUserAgent(r.UserAgent)
	if !r.Servable {
		var b strings.Builder
		fmt.Fprintf(&b, "This node cannot join pool %q: its Ignition", r.Pool)
		if known {
			fmt.Fprintf(&b, " (%s)", client)
		}
		fmt.Fprintf(&b, " reads config spec %s at most, but the pool's config needs spec %s", r.ClientSpec, r.NeededSpec)
		if len(r.Fields) > 0 {
			names := make([]string, 0, len(r.Fields))
			for _, f := range r.Fields {
				names = append(names, fmt.Sprintf("%s (%s, spec %s)", f.Path, f.What, f.Version))
			}
			fmt.Fprintf(&b, " for %s", strings.Join(names, ", "))
		}
		b.WriteString(".\n")
		if first, ok := firstReader(r.NeededSpec); ok && r.NeededSpec.Major == 3 {
			fmt.Fprintf(&b, "Boot this machine from a newer boot image (Ignition %s or newer)", first)
		} else {
			b.WriteString("Boot this machine from a newer boot image")
		}
		b.WriteString(", or remove those fields from the pool's MachineConfigs.\n")
		return g.stub(r.Pool, ReasonSpecUnreadable, b.String())
	}
	switch p.Mode {
	case "None":
		return Decision{Admit: true, Reason: reasonEnforcementOff}
	case "Automatic":
		return Decision{Admit: true, Reason: reasonAutomaticManage}
	case "Manual":
		if msg, old := bootImageTooOld(p); old {
			return g.stub(r.Pool, reasonBootImageOld, fmt.Sprintf("This node cannot join pool %q: %s\n"+
				"Update the boot image of the machine sets (or the recorded version in the skew policy) and recreate this machine.\n", r.Pool, msg))
		}
	}
	min, ok := p.minIgnition[r.Pool]
	if !ok {
		min, ok = p.minIgnition["*"]
	}
	if ok && known && client.less(min) {
		return g.stub(r.Pool, reasonIgnitionOld, fmt.Sprintf("This node cannot join pool %q: its Ignition %s is older than %s, the oldest this pool admits.\n"+
			"Boot this machine from a newer boot image.\n", r.Pool, client, min))
	}
	return Decision{Admit: true, Reason: reasonOK}
}

func bootImageTooOld(p *Policy) (string, bool) {
	switch p.Manual.Mode {
	case "OCPVersion":
		have, _ := parseOCP(p.Manual.OCPVersion)
		limit, _ := parseOCP(p.Release.OCPVersion)
		if have.less(limit) {
			return fmt.Sprintf("the cluster's boot image is from OpenShift %s, older than %s, the oldest this release supports.", have, limit), true
		}
	case "RHCOSVersion":
		have, _ := parseRHCOS(p.Manual.RHCOSVersion)
		limit, _ := parseRHCOS(p.Release.RHCOSVersion)
		if have.Less(limit) {
			return fmt.Sprintf("the cluster's boot image is RHCOS %s (%s), older than RHCOS %s, the oldest this release supports.", have.Raw, have.RHEL(), limit.Raw), true
		}
	}
	return "", false
}

func (g *Gate) stub(pool, reason, msg string) Decision {
	sum := sha256.Sum256([]byte(pool + "\x00" + reason + "\x00" + msg))
	id := "mcs-skew-" + hex.EncodeToString(sum[:4])
	msg += "Reference: " + id + " (search the machine-config-server log for it).\n"
	return Decision{Reason: reason, Message: msg, ID: id}
}

// Record logs a stubbed request and keeps it for /status.
func (g *Gate) Record(r Request, d Decision) {
	attrs := []any{"pool", r.Pool, "reason", d.Reason, "id", d.ID, "remote", r.RemoteAddr, "client", r.UserAgent, "clientSpec", r.ClientSpec.String()}
	if !r.NeededSpec.IsZero() {
		attrs = append(attrs, "neededSpec", r.NeededSpec.String())
	}
	g.log.Warn("node refused: boot-image skew", attrs...)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.recent) == recentMax {
		copy(g.recent, g.recent[1:])
		g.recent = g.recent[:recentMax-1]
	}
	g.recent = append(g.recent, Blocked{Time: time.Now(), Pool: r.Pool, Reason: d.Reason, ID: d.ID, Client: boundedUA(r.UserAgent), RemoteAddr: r.RemoteAddr})
}

func boundedUA(ua string) string { return text.Truncate(ua, 64, "") }

// Recent returns the last stubbed requests, oldest first.
func (g *Gate) Recent() []Blocked {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Blocked(nil), g.recent...)
}

// Stub returns the stub config for a decision at spec v, built once per
// (decision, spec) and then served from memory.
func (g *Gate) Stub(pool string, d Decision, v convert.Version) ([]byte, error) {
	key := d.ID + "@" + v.String()
	g.mu.Lock()
	body, ok := g.stubs[key]
	g.mu.Unlock()
	if ok {
		return body, nil
	}
	body, err := stubConfig(pool, d, v)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	if len(g.stubs) < 1024 {
		g.stubs[key] = body
	}
	g.mu.Unlock()
	return body, nil
}
