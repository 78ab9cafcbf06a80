package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/coreos/ignition/v2/config/validate"
)

// ValidItems says whether a config (the types.Config of any spec 3
// version) has no fatal problem for Ignition's validation without walking
// all of it for every pool. What Ignition checks of a file or a unit alone
// depends on that item alone; what it checks across items reads only a
// file's path (the same as another file's, directory's or link's, below a
// link, or a unit's or dropin's) and a unit's name and its dropins' (the
// same as another unit's, or a node's path), in every spec 3 version. So a
// config passes when each of its files and units passes alone (kept by
// a hash of the item's JSON and type, itemKey: the pools taking the worker
// configs share most of them) and the config passes with only the items that could meet such
// a check. One shared by a set's renders validates each item once. It
// also keeps, for the reviews that share one, Hold's token and check of
// each data URL and Ignition's step up of each item (see stepUpItems).
// Safe for concurrent use; the zero value is ready.
type ValidItems struct {
	mu     sync.Mutex
	valid  map[itemKey]bool          // passes alone
	cross  map[itemKey]bool          // the rest of a config passes (see crossPasses)
	lead   string                    // of Hold's tokens (see heldLead)
	tokens map[itemKey]int           // Hold's token of each content, -1 where Ignition refuses it
	steps  map[itemKey]reflect.Value // items stepped up (see stepUpItems)
}

// itemKey is an item's content key: the SHA-256 of its type's name and its
// JSON (see anyToken), so that what a ValidItems keeps of an item is the
// same few bytes however large it is (a file's inline contents run to
// megabytes), and Forget's bound on the count bounds the bytes too (a step
// up is kept only of an item of at most maxKeptStep bytes: see stepItems).
type itemKey [sha256.Size]byte

func itemKeyOf(t reflect.Type, js []byte) itemKey {
	h := sha256.New()
	// A type's name holds no NUL, so it cannot run into the JSON.
	h.Write([]byte(t.PkgPath() + "." + t.Name() + "\x00"))
	anyToken(js, func(b []byte) { h.Write(b) })
	return itemKey(h.Sum(nil))
}

// exactKey is itemKeyOf without taking tokens alike.
func exactKey(t reflect.Type, js []byte) itemKey {
	h := sha256.New()
	h.Write([]byte(t.PkgPath() + "." + t.Name() + "\x00"))
	h.Write(js)
	return itemKey(h.Sum(nil))
}

// anyToken writes a file's or unit's JSON, in pieces, with each
// placeholder token (see placeholders, Hold) the same: each stands for a
// data URL validated already, and what Ignition checks of a file's
// contents or append source alone is the same for any valid data URL, so
// an item reads alike in every encoder whatever its nonce. Only a source
// is taken so (a file's only sources are its contents and appends, where
// tokens stand, and no check compares two of them): elsewhere, a string
// that looks like a token is a user's, which a check across entries (two
// headers of one name) may compare with another.
func anyToken(js []byte, write func([]byte)) {
	lead := []byte(`"data:,mcsph-`)
	for {
		at := bytes.Index(js, lead)
		if at < 0 {
			write(js)
			return
		}
		end := at + len(lead)
		for end < len(js) && (js[end] >= '0' && js[end] <= '9' || js[end] >= 'a' && js[end] <= 'f' || js[end] == '-') {
			end++
		}
		write(js[:at])
		if end < len(js) && js[end] == '"' && bytes.HasSuffix(js[:at], []byte(`"source":`)) {
			write([]byte(`"data:,mcsph`)) // a token: the same for all
		} else {
			write(js[at:end]) // not one: as it is
		}
		js = js[end:]
	}
}

// unitDir is where Ignition writes units; a file there can clash with one.
const unitDir = "/etc/systemd/system/"

// Passes reports whether cfg has no fatal problem; false may also mean it
// was not shown here (the caller then validates it whole).
func (v *ValidItems) Passes(cfg any) bool {
	c := reflect.ValueOf(cfg)
	files := c.FieldByName("Storage").FieldByName("Files")
	units := c.FieldByName("Systemd").FieldByName("Units")
	if c.Kind() != reflect.Struct || files.Kind() != reflect.Slice || units.Kind() != reflect.Slice {
		return false
	}
	for _, list := range []reflect.Value{files, units} {
		for i := range list.Len() {
			if !v.alone(c, list, i) {
				return false
			}
		}
	}
	cross := reflect.New(c.Type()).Elem()
	cross.Set(c)
	keptFiles, keptUnits := crossItems(c, files, units)
	cross.FieldByName("Storage").FieldByName("Files").Set(keptFiles)
	cross.FieldByName("Systemd").FieldByName("Units").Set(keptUnits)
	return v.crossPasses(cross)
}

// crossPasses reports whether cross, a config holding only the files and
// units that could meet a check across items, passes Ignition's
// validation, kept by content like an item: a review validates its input,
// its candidate for the encoder and again for the readers, and what is
// left of a config past its items (its ignition section, users, the
// directories and links) is most often the one before's.
func (v *ValidItems) crossPasses(cross reflect.Value) bool {
	js, err := json.Marshal(cross.Interface())
	if err != nil {
		return !validate.ValidateWithContext(cross.Interface(), nil).IsFatal()
	}
	// Keyed by its JSON as it is: tokens are not taken alike here (see
	// anyToken), since the rest holds sources a check compares (merged
	// configs, certificate authorities). Hold's tokens are the same from
	// one review to the next.
	return v.kept(&v.cross, exactKey(cross.Type(), js), func() bool {
		return !validate.ValidateWithContext(cross.Interface(), nil).IsFatal()
	})
}

// kept is (*m)[key], found by passes and kept there the first time.
func (v *ValidItems) kept(m *map[itemKey]bool, key itemKey, passes func() bool) bool {
	v.mu.Lock()
	ok, known := (*m)[key]
	v.mu.Unlock()
	if known {
		return ok
	}
	ok = passes()
	v.mu.Lock()
	defer v.mu.Unlock()
	if *m == nil {
		*m = map[itemKey]bool{}
	}
	(*m)[key] = ok
	return ok
}

// Forget drops what v knows once it holds more than max items: a bound for
// one kept from one set of configs to the next.
func (v *ValidItems) Forget(max int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.valid)+len(v.cross)+len(v.tokens)+len(v.steps) > max {
		v.valid, v.cross, v.tokens, v.steps, v.lead = nil, nil, nil, nil, ""
	}
}

// alone reports whether list[i] passes in a config of its own: cfg's
// ignition section and that one item.
func (v *ValidItems) alone(cfg, list reflect.Value, i int) bool {
	item := list.Index(i)
	js, err := json.Marshal(item.Interface())
	if err != nil {
		return false
	}
	return v.kept(&v.valid, itemKeyOf(item.Type(), js), func() bool {
		tiny := reflect.New(cfg.Type()).Elem()
		tiny.FieldByName("Ignition").Set(cfg.FieldByName("Ignition"))
		one := reflect.MakeSlice(list.Type(), 1, 1)
		one.Index(0).Set(item)
		parent := "Storage"
		if item.Type().Name() == "Unit" {
			parent = "Systemd"
		}
		tiny.FieldByName(parent).FieldByName(list.Type().Elem().Name() + "s").Set(one)
		return !validate.ValidateWithContext(tiny.Interface(), nil).IsFatal()
	})
}

// crossItems are the files and units of cfg that could meet a check
// across items.
func crossItems(cfg, files, units reflect.Value) (reflect.Value, reflect.Value) {
	str := func(v reflect.Value, field string) string { return fieldOf(v, field).String() }
	storage := cfg.FieldByName("Storage")
	nodes, links := map[string]int{}, map[string]bool{}
	for _, list := range []string{"Files", "Directories", "Links"} {
		l := storage.FieldByName(list)
		for i := range l.Len() {
			nodes[str(l.Index(i), "Path")]++
			if list == "Links" {
				links[str(l.Index(i), "Path")] = true
			}
		}
	}
	names, unitPaths := map[string]int{}, map[string]bool{}
	dropinPaths := func(u reflect.Value) []string {
		d := u.FieldByName("Dropins")
		out := make([]string, d.Len())
		for i := range out {
			out[i] = unitDir + str(u, "Name") + ".d/" + str(d.Index(i), "Name")
		}
		return out
	}
	for i := range units.Len() {
		u := units.Index(i)
		names[str(u, "Name")]++
		unitPaths[unitDir+str(u, "Name")] = true
		for _, p := range dropinPaths(u) {
			unitPaths[p] = true
		}
	}
	keptFiles := reflect.MakeSlice(files.Type(), 0, 0)
	for i := range files.Len() {
		p := str(files.Index(i), "Path")
		if nodes[p] > 1 || unitPaths[p] || belowLink(p, links) {
			keptFiles = reflect.Append(keptFiles, files.Index(i))
		}
	}
	keptUnits := reflect.MakeSlice(units.Type(), 0, 0)
	for i := range units.Len() {
		u := units.Index(i)
		clash := nodes[unitDir+str(u, "Name")] > 0 || slices.ContainsFunc(dropinPaths(u), func(p string) bool { return nodes[p] > 0 })
		if names[str(u, "Name")] > 1 || clash {
			keptUnits = reflect.Append(keptUnits, u)
		}
	}
	return keptFiles, keptUnits
}

// fieldIndexes keeps each struct type's field indexes by name: crossItems
// reads a path or name of every item of every config, and FieldByName
// searches the embedded structs each time.
var fieldIndexes sync.Map // typeField → []int

type typeField struct {
	t    reflect.Type
	name string
}

// fieldOf is v.FieldByName(name), its index found once per type.
func fieldOf(v reflect.Value, name string) reflect.Value {
	k := typeField{v.Type(), name}
	if ix, ok := fieldIndexes.Load(k); ok {
		return v.FieldByIndex(ix.([]int))
	}
	f, ok := v.Type().FieldByName(name)
	if !ok {
		return reflect.Value{}
	}
	fieldIndexes.Store(k, f.Index)
	return v.FieldByIndex(f.Index)
}

// belowLink reports whether a link's path followed by "/" begins p, as
// Ignition checks it, by p's own prefixes ending before a "/": one lookup
// each, where comparing p with every link costs a config of many files
// and many links their product.
func belowLink(p string, links map[string]bool) bool {
	if len(links) == 0 {
		return false
	}
	for i := strings.LastIndexByte(p, '/'); i >= 0; i = strings.LastIndexByte(p[:i], '/') {
		if links[p[:i]] {
			return true
		}
	}
	return false
}
