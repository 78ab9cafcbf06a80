package render

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ignition-mcs/mcs/convert"
)

// fingerprintDocs is a worker pool and two custom pools that also select the
// worker role, as a cluster with per-hardware pools has, by file name.
func fingerprintDocs() map[string]string {
	pool := func(name string) string {
		return "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: " + name +
			"\nspec:\n  machineConfigSelector:\n    matchExpressions:\n    - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, " + name + "]}\n"
	}
	docs := map[string]string{
		"pool-worker": pool("worker"),
		"pool-gpu":    pool("gpu"),
		"pool-edge":   pool("edge"),
		"00-worker":   doc("00-worker", "worker", file("/etc/w", "data:,worker")),
		"50-gpu":      doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")),
		"50-edge":     doc("50-edge", "edge", file("/etc/edge", "data:,edge")),
		"cc": "apiVersion: machineconfiguration.openshift.io/v1\nkind: ControllerConfig\nmetadata:\n  name: machine-config-controller\n" +
			"spec:\n  baseOSContainerImage: quay.io/os@sha256:1\n  kubeAPIServerServingCAData: Y2E=\n",
	}
	return docs
}

// fingerprintSet loads fingerprintDocs with edit's documents replacing
// (added, or removed when empty) those of the same name.
func fingerprintSet(t *testing.T, edit map[string]string, api bool) *Set {
	t.Helper()
	docs := fingerprintDocs()
	maps.Copy(docs, edit)
	l := Loader{FromAPIServer: api}
	for _, k := range slices.Sorted(maps.Keys(docs)) {
		if docs[k] != "" {
			l.Data("in/"+k+".yaml", []byte(docs[k]))
		}
	}
	s, err := l.Set()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// keys are the keys of every pool's job.
func keys(t *testing.T, s *Set, opts Options) map[string]Key {
	t.Helper()
	out := map[string]Key{}
	for _, name := range s.PoolNames() {
		j, err := s.Job(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = j.Key()
		res, err := j.Render()
		if err != nil {
			t.Fatalf("pool %s: %v", name, err)
		}
		if res.Key != j.Key() {
			t.Fatalf("pool %s: the result's key is not its job's", name)
		}
	}
	return out
}

func TestKeys(t *testing.T) {
	all := []string{"edge", "gpu", "worker"}
	base := keys(t, fingerprintSet(t, nil, false), Options{})
	apiBase := keys(t, fingerprintSet(t, nil, true), Options{})
	docs := fingerprintDocs()
	if len(base) != 3 {
		t.Fatalf("keys %v", base)
	}
	for _, tc := range []struct {
		name    string
		edit    map[string]string
		opts    Options
		api     bool // read from an API server, where objects have no lines
		changed []string
	}{
		{name: "same objects loaded again", changed: nil},
		{name: "custom pool's MachineConfig", edit: map[string]string{"50-gpu": doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu2"))}, changed: []string{"gpu"}},
		{name: "custom pool's MachineConfig added", edit: map[string]string{"60-edge": doc("60-edge", "edge", "", "kernelArguments: [nosmt]")}, changed: []string{"edge"}},
		{name: "custom pool's MachineConfig removed", edit: map[string]string{"50-edge": ""}, changed: []string{"edge"}},
		{name: "worker MachineConfig", edit: map[string]string{"00-worker": doc("00-worker", "worker", file("/etc/w", "data:,worker2"))}, changed: all},
		{name: "label only", edit: map[string]string{"50-gpu": strings.Replace(doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")), "labels:\n", "labels:\n    x: z\n", 1)}, changed: []string{"gpu"}},
		{name: "pool's selector", edit: map[string]string{"pool-edge": strings.Replace(docs["pool-edge"], "values: [worker, edge]", "values: [edge]", 1)}, changed: []string{"edge"}},
		{name: "pool's labels and resourceVersion", edit: map[string]string{"pool-edge": strings.Replace(docs["pool-edge"], "metadata:\n", "metadata:\n  labels: {a: b}\n  resourceVersion: \"7\"\n", 1)}, changed: nil},
		// In a file, a new line moves the lines problems and reasons name.
		{name: "MachineConfig's resourceVersion, in a file", edit: map[string]string{"50-gpu": strings.Replace(doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")), "metadata:\n", "metadata:\n  resourceVersion: \"9\"\n", 1)}, changed: []string{"gpu"}},
		{name: "MachineConfig's resourceVersion", api: true, edit: map[string]string{"50-gpu": strings.Replace(doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")), "metadata:\n", "metadata:\n  resourceVersion: \"9\"\n", 1)}, changed: nil},
		{name: "a MachineConfig's lines moved", edit: map[string]string{"50-gpu": "# a comment\n" + doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu"))}, changed: []string{"gpu"}},
		{name: "MachineConfig's annotation", edit: map[string]string{"50-gpu": strings.Replace(doc("50-gpu", "gpu", file("/etc/gpu", "data:,gpu")), "metadata:\n", "metadata:\n  annotations: {a: b}\n", 1)}, changed: []string{"gpu"}},
		{name: "OS image", edit: map[string]string{"cc": strings.Replace(docs["cc"], "sha256:1", "sha256:2", 1)}, changed: all},
		{name: "served CA only", edit: map[string]string{"cc": strings.Replace(docs["cc"], "Y2E=", "Y2I=", 1)}, changed: nil},
		{name: "options", opts: Options{MinSpec: convert.V3_2}, changed: all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keys(t, fingerprintSet(t, tc.edit, tc.api), tc.opts)
			was := base
			if tc.api {
				was = apiBase
			}
			var changed []string
			for _, p := range all {
				if got[p] != was[p] {
					changed = append(changed, p)
				}
			}
			if !slices.Equal(changed, tc.changed) {
				t.Fatalf("changed %v, want %v", changed, tc.changed)
			}
		})
	}
}

// Every field of every input a render or the node files read is in its
// key (the render's, or NodeFiles.Key), or listed here with why neither
// reads it: the test sets each field, one at a time, to a value it did not
// have and checks that a key changed. So a field added to an input (a new
// MachineConfig spec field, a new option, a new node file) fails this test
// until it is in a key or in this list, and cannot silently leave a server
// carrying stale bytes over. The sources' trigger keys are held to the
// same inputs (source/kube TestTriggerKeysCoverTheRender).
func TestKeyCoversEveryField(t *testing.T) {
	notRead := map[string]bool{}
	for input, fields := range map[string][]string{
		// Kinds and API versions are checked when loading; Extra is what this
		// package does not model (status, uid, ownerReferences): never rendered.
		// Locals are for render diff, which reads them from the Set's
		// MachineConfigs, never from a Result.
		"MachineConfig": {"APIVersion", "Kind", "Extra", "Metadata.Extra", "Locals"},
		// A cluster changes a pool's labels and annotations all the time; the
		// render reads its MachineConfig selector, not its node selector
		// (poolSpecNotRead).
		"MachineConfigPool": {"APIVersion", "Kind", "Metadata.Labels", "Metadata.Annotations", "Metadata.Extra", "Spec.NodeSelector"},
		// Where it was read and its name are only quoted in errors.
		"ControllerConfig": {"Source", "Name"},
	} {
		for _, f := range fields {
			notRead[input+"."+f] = true
		}
	}
	if !slices.Equal(poolSpecNotRead, []string{"nodeSelector"}) {
		t.Errorf("poolSpecNotRead %v: list it here too, with why", poolSpecNotRead)
	}
	base := func() []any {
		mc := &MachineConfig{APIVersion: APIVersion, Kind: KindMachineConfig, Source: "in/50-gpu.yaml",
			Metadata: ObjectMeta{Name: "50-gpu", Labels: map[string]string{roleLabel: "gpu"}},
			Spec:     MachineConfigSpec{Config: []byte(`{"ignition":{"version":"3.2.0"}}`)}}
		pool := &MachineConfigPool{Metadata: ObjectMeta{Name: "gpu"}, Source: "in/pool.yaml",
			Spec: MachineConfigPoolSpec{MachineConfigSelector: &LabelSelector{MatchLabels: map[string]string{roleLabel: "gpu"}}}}
		return []any{mc, pool, &ControllerConfig{}, &Options{}, &NodeFiles{}}
	}
	key := func(in []any) [2]Key {
		mc, pool, cc, opts, nf := in[0].(*MachineConfig), in[1].(*MachineConfigPool), in[2].(*ControllerConfig), in[3].(*Options), in[4].(*NodeFiles)
		return [2]Key{renderKey(pool, []*entry{newEntry(mc, nil)}, cc, streamInput{}, *opts), nf.Key(cc)}
	}
	want := key(base())
	seen := 0
	for input := range len(base()) {
		typ := reflect.TypeOf(base()[input]).Elem()
		eachLeaf(typ, typ.Name(), nil, func(name string, index []int) {
			seen++
			if _, ok := notRead[name]; ok {
				delete(notRead, name)
				return
			}
			in := base()
			change(reflect.ValueOf(in[input]).Elem().FieldByIndex(index))
			if key(in) == want {
				t.Errorf("%s: setting it changes no key; add it to the render's or the node files' input, or to notRead with why", name)
			}
		})
	}
	if seen < 30 {
		t.Fatalf("examined %d fields", seen)
	}
	for name := range notRead {
		t.Errorf("notRead lists %s, which no input has", name)
	}
}

// Every spec field of a pool but those poolSpecNotRead names is one a
// source's trigger key reads.
func TestPoolSpecFieldsRead(t *testing.T) {
	if got := PoolSpecFieldsRead(); !slices.Equal(got, []string{"machineConfigSelector", "osImageStream"}) {
		t.Errorf("PoolSpecFieldsRead() = %v", got)
	}
}

// eachLeaf calls fn with the name and index of every field of t, into the
// structs it embeds or holds by value.
func eachLeaf(t reflect.Type, prefix string, index []int, fn func(name string, index []int)) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, idx := prefix+"."+f.Name, append(slices.Clone(index), i)
		if f.Type.Kind() == reflect.Struct {
			eachLeaf(f.Type, name, idx, fn)
			continue
		}
		fn(name, idx)
	}
}

// change sets v to a value it does not have.
func change(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(append(slices.Clone(v.Bytes()), ` `...))
			if v.Len() == 1 || v.Bytes()[0] == '{' {
				v.SetBytes([]byte(`{"ignition":{"version":"3.1.0"}}`)) // JSON stays JSON
			}
			return
		}
		v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		val := reflect.New(v.Type().Elem()).Elem()
		if val.Kind() == reflect.Slice && val.Type().Elem().Kind() == reflect.Uint8 {
			val.SetBytes([]byte("1"))
		}
		v.SetMapIndex(reflect.ValueOf("x").Convert(v.Type().Key()), val)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	default:
		panic("change: no value for a " + v.Kind().String())
	}
}

// What loading adds to a MachineConfig is in its key, or derived from what
// is (TestKeyCoversEveryField): a field added to entry fails here until
// entry.key hashes it or it is listed as derived.
func TestEntryKeyCoversEntry(t *testing.T) {
	hashed := []string{"mc", "problems", "warnings", "generated", "doc"}
	derived := []string{
		"cfg", "written", "parsed", "parsedKey", // parsed from mc.Spec.Config
		"keyOnce", "sum", // the key itself
		"itemsOnce", "items", // overrides' view of cfg
	}
	var fields []string
	for f := range reflect.TypeFor[entry]().Fields() {
		fields = append(fields, f.Name)
	}
	slices.Sort(fields)
	want := slices.Sorted(slices.Values(append(hashed, derived...)))
	if !slices.Equal(fields, want) {
		t.Fatalf("entry has fields %v; entry.key hashes %v and %v are derived: hash a new field in entry.key, or list it as derived", fields, hashed, derived)
	}
}
