package impact

import (
	"context"
	"net/http"
	"strings"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/skewgate"
)

// Server answers a config request as mcs does; *serve.Server is one.
type Server interface {
	Answer(ctx context.Context, pool string, h http.Header) (int, http.Header, []byte)
}

// eraClient is a node of one Ignition release line: the spec it reads and
// the headers it sends.
type eraClient struct {
	Spec      convert.Version
	Ignition  skewgate.IgnitionVersion
	UserAgent string
	Accept    string
}

// spec2Client is the last spec-2 Ignition, which old RHCOS boot images run.
var spec2Client = skewgate.IgnitionVersion{Major: 0, Minor: 35, Patch: 0}

// eraClients lists one client per Ignition release line (skewgate.ReleaseLines), its
// oldest release, the one a policy of minimum versions refuses first (for
// spec 2, v0.35.0: the release old boot images run).
func eraClients() []eraClient {
	lines := skewgate.ReleaseLines()
	out := make([]eraClient, 0, len(lines))
	for _, r := range lines {
		v := r.Ignition
		if r.Spec.Major == 2 {
			v = spec2Client
		}
		ua := "Ignition/" + v.String()
		out = append(out, eraClient{Spec: r.Spec, Ignition: v, UserAgent: ua, Accept: acceptFor(ua)})
	}
	return out
}

// acceptFor is the Accept header a client sends, from its User-Agent: an
// Ignition release asks for the newest spec it reads (reference: what real
// clients send), but v2.0.x still sent spec 2's header (observed with the
// real v2.0.0; mcs corrects it by the User-Agent); anything else sends
// curl's */*.
func acceptFor(userAgent string) string {
	v, ok := skewgate.ParseUserAgent(userAgent)
	if !ok {
		return "*/*"
	}
	spec := skewgate.SpecFor(v)
	if spec.Major == 2 || v.Major == 2 && v.Minor == 0 {
		return spec2Accept
	}
	return "application/vnd.coreos.ignition+json;version=" + spec.String() + ", */*;q=0.1"
}

const spec2Accept = "application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1"

// ClientHeader is the request header of a client: its User-Agent, the
// Accept given or the one it sends, and identity encoding, as Ignition asks.
func ClientHeader(userAgent, accept string) http.Header {
	if accept == "" {
		accept = acceptFor(userAgent)
	}
	h := http.Header{}
	h.Set("User-Agent", userAgent)
	h.Set("Accept", accept)
	h.Set("Accept-Encoding", "identity")
	return h
}

// Ask is the server's answer to one client, read as an Outcome.
func Ask(ctx context.Context, s Server, pool string, h http.Header) (*Outcome, []byte) {
	status, rh, body := s.Answer(ctx, pool, h)
	o := &Outcome{Status: status, Admitted: status == http.StatusOK}
	if _, v, ok := strings.Cut(rh.Get("Content-Type"), ";version="); ok {
		o.Spec = v
	}
	if skew := rh.Get("X-Mcs-Skew"); skew != "" {
		reason, _, _ := strings.Cut(skew, ";")
		o.Admitted, o.Reason = false, strings.TrimSpace(reason)
	}
	return o, body
}

// eraChange names an era's fate between two outcomes (nil: no pool).
func eraChange(old, new *Outcome) EraChange {
	switch {
	case new == nil:
		return EraGone
	case old == nil && new.Admitted:
		return EraAdmitted
	case old == nil:
		return EraRefused
	case old.Admitted && new.Admitted:
		return EraStillAdmitted
	case old.Admitted:
		return EraNewlyRefused
	case new.Admitted:
		return EraNewlyAdmitted
	}
	return EraStillRefused
}
