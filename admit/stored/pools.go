package stored

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// noPool is the pool label of MachineConfigs no pool selects or owns: a
// value no pool can be named (pool names are DNS labels).
const noPool = "(none)"

// pool is what membership needs of a MachineConfigPool.
type pool struct {
	name     string
	selector labels.Selector // nil: selects nothing
}

// poolsFrom reads the pools' names and MachineConfig selectors. A selector
// that is empty or does not parse selects nothing: upstream's renderer
// lets an empty selector match nothing, and a broken one is the pool's
// own problem, reported by the render controller.
func poolsFrom(objs []*unstructured.Unstructured) []pool {
	out := make([]pool, 0, len(objs))
	for _, u := range objs {
		p := pool{name: u.GetName()}
		if m, ok, _ := unstructured.NestedMap(u.Object, "spec", "machineConfigSelector"); ok && len(m) > 0 {
			var ls metav1.LabelSelector
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err == nil && (len(ls.MatchLabels) > 0 || len(ls.MatchExpressions) > 0) {
				if s, err := metav1.LabelSelectorAsSelector(&ls); err == nil {
					p.selector = s
				}
			}
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b pool) int { return strings.Compare(a.name, b.name) })
	return out
}

// poolsOf names the pools mc belongs to, sorted: a rendered config's is
// the pool that owns it (its controller owner reference, else the pool its
// name rendered-<pool>-<hash> names, the longest such); any other's, every
// pool whose selector selects its labels. None is [noPool].
func poolsOf(mc *unstructured.Unstructured, pools []pool) []string {
	for _, o := range mc.GetOwnerReferences() {
		if o.Kind == "MachineConfigPool" && o.Controller != nil && *o.Controller {
			return []string{o.Name}
		}
	}
	if rest, ok := strings.CutPrefix(mc.GetName(), "rendered-"); ok {
		owner := ""
		for _, p := range pools {
			if strings.HasPrefix(rest, p.name+"-") && len(p.name) > len(owner) {
				owner = p.name
			}
		}
		if owner != "" {
			return []string{owner}
		}
	}
	var out []string
	set := labels.Set(mc.GetLabels())
	for _, p := range pools {
		if p.selector != nil && p.selector.Matches(set) {
			out = append(out, p.name)
		}
	}
	if len(out) == 0 {
		return []string{noPool}
	}
	return out
}
