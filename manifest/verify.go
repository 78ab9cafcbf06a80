package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// verify reads the rewritten file back: the same objects in the same
// places, each the same value but for the configs lowered, and each of
// those parsing as the lowered config. A rewrite that fails it is a bug;
// the file is then left as it was.
func verify(file string, old, out []byte, want []lowered, ps parses) error {
	before, _ := objects(file, old)
	after, errs := objects(file, out)
	if len(errs) > 0 {
		return fmt.Errorf("the rewritten file would not read: %v", errs[0])
	}
	if len(before) != len(after) {
		return fmt.Errorf("the rewritten file holds %d objects, not %d", len(after), len(before))
	}
	j := 0
	for i, o := range before {
		n := after[i]
		if o.label() != n.label() {
			return fmt.Errorf("object %d would be %s, not %s", i+1, n.label(), o.label())
		}
		a, b := valueWithoutConfig(o.js), valueWithoutConfig(n.js)
		if a == nil || !reflect.DeepEqual(a, b) {
			return fmt.Errorf("%s would change outside spec.config", o.label())
		}
		if !isMachineConfig(o) {
			continue
		}
		if _, ok := configOf(o); !ok {
			continue
		}
		w := want[j]
		j++
		got, _ := configOf(n)
		if !w.parsed {
			if !reflect.DeepEqual(decode(got), decode(w.config)) {
				return fmt.Errorf("%s: spec.config would change", o.label())
			}
			continue
		}
		m, err := ps.marshalParsed(got)
		if err != nil {
			return fmt.Errorf("%s: the rewritten spec.config would not parse: %w", o.label(), err)
		}
		if !bytes.Equal(m, w.config) {
			return errors.New(o.label() + ": the rewritten spec.config would not parse as the lowered config")
		}
	}
	return nil
}

// valueWithoutConfig is an object's value without spec.config, or nil.
func valueWithoutConfig(js []byte) any {
	v, _ := decode(js).(map[string]any)
	if v == nil {
		return nil
	}
	if spec, ok := v["spec"].(map[string]any); ok {
		delete(spec, "config")
	}
	return v
}

// decode reads JSON, numbers as written; nil when it does not read.
func decode(js []byte) any {
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	return v
}
