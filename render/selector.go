package render

import (
	"fmt"
	"slices"

	"github.com/ignition-mcs/mcs/convert"
)

// LabelSelector is Kubernetes' metav1.LabelSelector: every matchLabels pair
// and every expression must hold.
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one matchExpressions entry.
type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Selector operators, spelled as Kubernetes spells them.
const (
	opIn           = "In"
	opNotIn        = "NotIn"
	opExists       = "Exists"
	opDoesNotExist = "DoesNotExist"
)

// empty reports whether the selector has no terms. Upstream's renderer lets
// a nil or empty selector match nothing, not everything.
func (s *LabelSelector) empty() bool {
	return s == nil || len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}

// validate checks the selector as Kubernetes' LabelSelectorAsSelector does:
// In and NotIn need values, Exists and DoesNotExist take none.
func (s *LabelSelector) validate() *fieldError {
	if s == nil {
		return nil
	}
	for i, r := range s.MatchExpressions {
		at := convert.NewPath("matchExpressions", i)
		if r.Key == "" {
			return &fieldError{at.Append("key"), "key must not be empty"}
		}
		switch r.Operator {
		case opIn, opNotIn:
			if len(r.Values) == 0 {
				return &fieldError{at.Append("values"), fmt.Sprintf("operator %s needs at least one value", r.Operator)}
			}
		case opExists, opDoesNotExist:
			if len(r.Values) > 0 {
				return &fieldError{at.Append("values"), fmt.Sprintf("operator %s takes no values", r.Operator)}
			}
		default:
			return &fieldError{at.Append("operator"), fmt.Sprintf("unknown operator %q: want In, NotIn, Exists or DoesNotExist", r.Operator)}
		}
	}
	return nil
}

// matches reports whether labels satisfy the selector. An empty selector
// matches nothing; call Validate first, an invalid term matches nothing.
func (s *LabelSelector) matches(labels map[string]string) bool {
	if s.empty() {
		return false
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range s.MatchExpressions {
		v, ok := labels[r.Key]
		switch r.Operator {
		case opIn:
			if !ok || !slices.Contains(r.Values, v) {
				return false
			}
		case opNotIn:
			if ok && slices.Contains(r.Values, v) {
				return false
			}
		case opExists:
			if !ok {
				return false
			}
		case opDoesNotExist:
			if ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}
