package render

import "testing"

func TestSelector(t *testing.T) {
	worker := map[string]string{roleLabel: "worker"}
	infra := map[string]string{roleLabel: "infra", "zone": "a"}
	none := map[string]string{}
	req := func(key, op string, values ...string) LabelSelectorRequirement {
		return LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	tests := []struct {
		name   string
		sel    *LabelSelector
		labels map[string]string
		want   bool
	}{
		{"nil selects nothing", nil, worker, false},
		{"empty selects nothing", &LabelSelector{}, worker, false},
		{"matchLabels", &LabelSelector{MatchLabels: worker}, worker, true},
		{"matchLabels other value", &LabelSelector{MatchLabels: worker}, infra, false},
		{"matchLabels missing", &LabelSelector{MatchLabels: worker}, none, false},
		{"In", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req(roleLabel, opIn, "worker", "infra")}}, infra, true},
		{"In missing label", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req(roleLabel, opIn, "worker")}}, none, false},
		{"NotIn", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req(roleLabel, opNotIn, "worker")}}, infra, true},
		{"NotIn excluded", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req(roleLabel, opNotIn, "worker")}}, worker, false},
		{"NotIn missing label matches", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req(roleLabel, opNotIn, "worker")}}, none, true},
		{"Exists", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req("zone", opExists)}}, infra, true},
		{"Exists missing", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req("zone", opExists)}}, worker, false},
		{"DoesNotExist", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req("zone", opDoesNotExist)}}, worker, true},
		{"DoesNotExist present", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req("zone", opDoesNotExist)}}, infra, false},
		{"all terms must hold", &LabelSelector{MatchLabels: map[string]string{"zone": "a"}, MatchExpressions: []LabelSelectorRequirement{req(roleLabel, opIn, "worker")}}, infra, false},
		{"unknown operator matches nothing", &LabelSelector{MatchExpressions: []LabelSelectorRequirement{req(roleLabel, "Like", "w")}}, worker, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sel.matches(tc.labels); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSelectorValidate(t *testing.T) {
	tests := []struct {
		name string
		r    LabelSelectorRequirement
		path string // "" when valid
	}{
		{"In with values", LabelSelectorRequirement{Key: "k", Operator: opIn, Values: []string{"v"}}, ""},
		{"In without values", LabelSelectorRequirement{Key: "k", Operator: opIn}, "$.matchExpressions.0.values"},
		{"Exists with values", LabelSelectorRequirement{Key: "k", Operator: opExists, Values: []string{"v"}}, "$.matchExpressions.0.values"},
		{"unknown operator", LabelSelectorRequirement{Key: "k", Operator: "in"}, "$.matchExpressions.0.operator"},
		{"empty key", LabelSelectorRequirement{Operator: opExists}, "$.matchExpressions.0.key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fe := (&LabelSelector{MatchExpressions: []LabelSelectorRequirement{tc.r}}).validate()
			switch {
			case tc.path == "" && fe != nil:
				t.Errorf("unexpected error %v", fe)
			case tc.path != "" && (fe == nil || fe.Path.String() != tc.path):
				t.Errorf("error %v, want one at %s", fe, tc.path)
			}
		})
	}
}
