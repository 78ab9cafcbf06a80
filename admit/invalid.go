package admit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/ignition-mcs/mcs/convert"
)

// passWarnings are the warnings of a config stored as written. One that
// does not parse gets one warning per problem, each at its JSON path in
// the MachineConfig (the line and column of the API server's JSON, all on
// line 1, would tell the writer nothing), at most maxListed of them.
func passWarnings(name string, raw []byte, pe *PassError) []string {
	var inv *convert.InvalidError
	if pe.Kind != PassInvalid || !errors.As(pe.Err, &inv) || len(inv.Problems) == 0 {
		return []string{fmt.Sprintf("MachineConfig %s: spec.config %v", name, pe)}
	}
	problems, complete := allProblems(raw, inv.Problems)
	head := "stored as written: it does not parse"
	if !inv.Version.IsZero() {
		head += " at its spec " + inv.Version.String()
	}
	out := make([]string, 0, min(len(problems), maxListed+1))
	for i, p := range problems {
		if i == maxListed {
			more := fmt.Sprintf("%d more problems", len(problems)-maxListed)
			if !complete {
				more = "more problems" // not all looked for: the list is bounded
			}
			out = append(out, fmt.Sprintf("MachineConfig %s: spec.config %s: and %s", name, head, more))
			break
		}
		out = append(out, fmt.Sprintf("MachineConfig %s: %s: %s: %s", name, machinePath(p.Path), head, p.Message))
	}
	return out
}

// allProblems are first and the problems behind them, up to one more than
// maxListed. Ignition's parser stops at the first value of a wrong type:
// each round takes out the values it stopped at and parses again, so a
// writer learns every mistake at once, not one per write.
// complete is false when the bound, not the config, ended the search.
func allProblems(raw []byte, first []convert.Problem) (out []convert.Problem, complete bool) {
	out = append([]convert.Problem(nil), first...)
	seen := map[string]bool{}
	for _, p := range first {
		seen[p.Path.String()] = true
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return out, true
	}
	next := first
	for len(out) <= maxListed {
		// Only a value where decoding stopped is taken out: taking out a
		// value that decoded would make problems of its own.
		removed := false
		for _, p := range next {
			removed = p.Stopped && remove(doc, p.Path.Parts()) || removed
		}
		if !removed {
			return out, true
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return out, true
		}
		_, err = convert.ParseDeclared(b)
		var inv *convert.InvalidError
		if !errors.As(err, &inv) {
			return out, true
		}
		next = next[:0:0]
		for _, p := range inv.Problems {
			if k := p.Path.String(); !seen[k] && !p.Path.IsZero() {
				seen[k] = true
				next = append(next, p)
			}
		}
		out = append(out, next...)
	}
	// Bounded: what the last round stopped at may hide more.
	return out, !slices.ContainsFunc(next, func(p convert.Problem) bool { return p.Stopped })
}

// remove deletes the value at path (keys and list indexes) from v; false
// when there is none. A list item is replaced by null, keeping the indexes
// of the ones after it.
func remove(v any, path []string) bool {
	if len(path) == 0 {
		return false
	}
	for _, seg := range path[:len(path)-1] {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	last := path[len(path)-1]
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[last]; ok {
			delete(x, last)
			return true
		}
	case []any:
		if i, err := strconv.Atoi(last); err == nil && i >= 0 && i < len(x) && x[i] != nil {
			x[i] = nil
			return true
		}
	}
	return false
}
