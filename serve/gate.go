package serve

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/serve/pipeline"
	"github.com/ignition-mcs/mcs/serve/status"
	"github.com/ignition-mcs/mcs/skewgate"
)

// gate asks the skew gate about a request and, when it refuses the node,
// answers 200 with the stub config (a 4xx would stop the boot with nothing
// on the console; a 5xx would retry forever). It reports whether it answered.
func (s *Server) gate(w http.ResponseWriter, r *http.Request, p *pipeline.Pool, wnt want, resp *pipeline.Response, ua string) bool {
	if wnt.kind == wantNone {
		return false
	}
	req := skewgate.Request{Pool: p.Name(), UserAgent: ua, RemoteAddr: r.RemoteAddr, Servable: resp != nil}
	stubSpec := convert.V3_0
	switch wnt.kind {
	case wantSpec3:
		req.ClientSpec = min3(wnt.max)
		stubSpec = req.ClientSpec
	case wantSpec2:
		req.ClientSpec, stubSpec = convert.V2_2, convert.V2_2
	case wantDefault:
		if s.cfg.DefaultSpec == convert.V2_2 {
			stubSpec = convert.V2_2
		}
	}
	if resp == nil {
		v, err := whyNot(p, wnt)
		req.NeededSpec = neededAbove(p, v)
		var ce *convert.CannotExpressError
		if errors.As(err, &ce) {
			req.Fields = ce.Reasons
		}
	}
	d := s.cfg.Gate.Decide(req)
	decision := "admit"
	if !d.Admit {
		decision = "stub"
	}
	s.counters.skewed(p.Name(), decision, d.Reason)
	if d.Admit {
		return false
	}
	body, err := s.cfg.Gate.Stub(p.Name(), d, stubSpec)
	if err != nil {
		s.cfg.Logger.Error("building skew stub", "pool", p.Name(), "err", err)
		s.refuser.refuse(w, r, status.CauseStubFailed, p.Name(), "cannot build the skew stub config: "+d.ID)
		return true
	}
	if _, node := skewgate.ParseUserAgent(req.UserAgent); node {
		// A node refused: kept for /status and told to the cluster. An
		// admin's curl gets the same answer, but is no refused node.
		s.cfg.Gate.Record(req, d)
		s.rec.Refused(req, d)
	}
	info := infoOf(r)
	info.spec, info.decision = stubSpec.String(), "stub:"+d.ID
	w.Header()["X-Mcs-Skew"] = []string{d.Reason + "; id=" + d.ID}
	writeBody(w, r, []string{pipeline.IgnitionType + ";version=" + stubSpec.String()},
		&pipeline.Form{Body: pipeline.BytesBody(body), ETag: []string{`"` + d.ID + "-" + stubSpec.String() + `"`}, Length: []string{strconv.Itoa(len(body))}})
	return true
}

// min3 caps a requested 3.x version at the newest we write.
func min3(v convert.Version) convert.Version {
	if convert.Newest.Less(v) {
		return convert.Newest
	}
	return v
}

// neededAbove is the oldest spec newer than v that p can be served at.
func neededAbove(p *pipeline.Pool, v convert.Version) convert.Version {
	for _, o := range convert.OutputVersions {
		if v.Less(o) && p.Response(o) != nil {
			return o
		}
	}
	return p.Lowest()
}
