package serve

import (
	"errors"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/serve/pipeline"
)

// pick returns the response for what the client wants, or nil when no
// version the client reads can express the pool's config.
func pick(p *pipeline.Pool, w want, defaultSpec convert.Version) *pipeline.Response {
	switch w.kind {
	case wantDefault:
		if !defaultSpec.IsZero() {
			return p.Response(defaultSpec)
		}
		return p.Response(p.Result().Spec)
	case wantSpec2:
		return p.Response(convert.V2_2)
	case wantSpec3:
		for i := len(convert.OutputVersions) - 1; i >= 0; i-- {
			v := convert.OutputVersions[i]
			if v.Major != 3 || w.max.Less(v) {
				continue
			}
			if r := p.Response(v); r != nil {
				return r
			}
		}
	}
	return nil
}

// whyNot explains why the newest version a client reads cannot be served.
func whyNot(p *pipeline.Pool, w want) (convert.Version, error) {
	v := convert.Newest
	switch w.kind {
	case wantSpec2:
		v = convert.V2_2
	case wantSpec3:
		if w.max.Less(v) {
			v = w.max
		}
	}
	err := p.Blocked(v)
	if err == nil {
		err = errors.New("no servable version")
	}
	return v, err
}
