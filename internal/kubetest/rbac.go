package kubetest

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Rule is one rule of a Role or ClusterRole, each list sorted.
type Rule struct{ Groups, Resources, Verbs, Names []string }

// Rules reads role's rules. A missing role, or a rule with a field besides
// apiGroups, resources, verbs and resourceNames, fails t: a test comparing
// them would pass over what it does not read.
func Rules(t testing.TB, role *unstructured.Unstructured) []Rule {
	t.Helper()
	if role == nil {
		t.Fatal("no such role")
	}
	list, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []Rule
	for _, r := range list {
		m := r.(map[string]any)
		for k := range m {
			if k != "apiGroups" && k != "resources" && k != "verbs" && k != "resourceNames" {
				t.Errorf("%s: a rule has %s", role.GetName(), k)
			}
		}
		get := func(k string) []string {
			var s []string
			l, _ := m[k].([]any)
			for _, v := range l {
				s = append(s, v.(string))
			}
			slices.Sort(s)
			return s
		}
		out = append(out, Rule{get("apiGroups"), get("resources"), get("verbs"), get("resourceNames")})
	}
	return out
}

// YAML is v as trimmed YAML, to compare values read from manifests and
// show them in a failure.
func YAML(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}
