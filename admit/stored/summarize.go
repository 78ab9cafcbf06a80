package stored

import (
	"encoding/json"
	"errors"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
)

// summarize runs the webhook's own conversion (admit.Lower) on a stored
// spec.config: the spec it declares, the spec the webhook would store it
// at, and the fields that need more than spec 3.0.0.
func summarize(raw []byte) *summary {
	s := &summary{}
	res, err := admit.Lower(raw, convert.Version{})
	if !res.Declared.IsZero() {
		s.Stored = res.Declared.String()
	} else {
		s.Stored = declared(raw)
	}
	var pass *admit.PassError
	switch {
	case errors.As(err, &pass) && pass.Kind == admit.PassSpec2:
		return s
	case err != nil:
		s.Problem = err.Error()
	}
	if !res.Stored.IsZero() {
		s.Lowest = res.Stored.String()
	}
	for _, r := range res.Reasons {
		s.Needs = append(s.Needs, need{Path: r.Path.String(), What: r.What, Version: r.Version.String()})
	}
	return s
}

// declared is the version a config that did not parse says it is, as
// written ("" when it says none), for the report: "3.7.0" is a spec no
// release of the table reads.
func declared(raw []byte) string {
	var stub struct {
		Ignition struct {
			Version any `json:"version"`
		} `json:"ignition"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &stub) != nil || stub.Ignition.Version == nil {
		return ""
	}
	if s, ok := stub.Ignition.Version.(string); ok {
		return s
	}
	b, _ := json.Marshal(stub.Ignition.Version)
	return string(b)
}
