package pipeline

import (
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

// Bodies gives the external tests, for every output version, the body
// BuildSnapshot precomputes for res and the body encoding the served config
// directly gives; a version missing from one map is missing from the other
// unless the two disagree.
func Bodies(res *render.Result, cc *render.ControllerConfig, nf render.NodeFiles) (precomputed, direct map[convert.Version][]byte, err error) {
	shared, err := nf.Files(res, cc)
	if err != nil {
		return nil, nil, err
	}
	p, err := buildPool(res, cc, nf)
	if err != nil {
		return nil, nil, err
	}
	precomputed, direct = map[convert.Version][]byte{}, map[convert.Version][]byte{}
	for _, v := range convert.OutputVersions {
		if r := p.Response(v); r != nil {
			precomputed[v] = r.Body.Bytes()
		}
		cfg := withNodeFiles(res.Config, shared)
		if servedConfig(&cfg, res, v) != nil {
			continue
		}
		if b, err := convert.Encode(&cfg, v, false); err == nil {
			direct[v] = b
		}
	}
	return precomputed, direct, nil
}
