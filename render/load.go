package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	butanecommon "github.com/coreos/ignition/v2/butane/config/common"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/intake"
)

// Set is everything loaded from a source, ready to render. It is not changed
// after Load or Loader.Set, so its methods are safe for concurrent use.
type Set struct {
	entries []*entry // sorted by name
	byName  map[string]*entry
	pools   []*MachineConfigPool // sorted by name
	cc      *ControllerConfig
	streams *osImageStream // nil: the cluster publishes none
	notices []*Error
	// defaulted: the tree defines no pool, so the pools are the default
	// ones its MachineConfigs' roles call for.
	defaulted bool
	// merges are the worker configs' merge, shared by the pools rendered.
	merges mergeCache
	// shared is what renders share by content: the loader's cache's, so
	// kept from one load to the next, else the set's own.
	shared *renderShared
}

// entry is one MachineConfig with its Ignition config parsed once, at load,
// so that rendering (which the server repeats on every change) does not.
type entry struct {
	mc        *MachineConfig
	cfg       *convert.Config      // nil when the MachineConfig has no Ignition config
	written   convert.WrittenModes // directory modes its parse masked
	problems  []*Error             // any of these fails every pool selecting it
	warnings  []*Error
	generated bool    // written by an upstream controller, not by a user
	doc       *docRef // where it was written, for the lines of problems; nil when unknown

	keyOnce sync.Once // computes sum, on first use (see key)
	sum     Key

	itemsOnce sync.Once // computes items, on first use (see keyedItems)
	items     []keyedItem

	// parsed is its config as the parse cache holds it, by parsedKey
	// (nil without a config): an entry kept from one load to the next
	// keeps its parse in the cache too.
	parsed    *parsedConfig
	parsedKey [32]byte
}

// Loader gathers objects from in-memory streams (files a source read, API
// objects) into one Set. It reads no files: source/tree reads trees into it.
type Loader struct {
	// Cache, when set, keeps parsed configs from one load to the next.
	Cache *ParseCache
	// FromAPIServer says the objects come from a Kubernetes API server, not
	// from files a person wrote: a MachineConfig field this release does
	// not know (a newer release's CRD may carry one) is then a warning
	// naming it, never a failed pool; in files it is an error at its line,
	// as a typo that would silently drop content.
	FromAPIServer bool
	// Butane translates a Butane config (see intake.Butane). Butane reads
	// the files a config embeds (local:) itself, so a source reading a
	// tree sets one that checks them first (source/tree); nil translates
	// with no files directory, and a config embedding a file fails as
	// Butane fails it. An *Errors it returns is passed on as it is.
	Butane func(file, name string, data []byte) ([]byte, []intake.Problem, error)

	configs []*MachineConfig
	docs    map[*MachineConfig]*docRef // where each was written
	// decodedFrom is, for each of configs, the kept decoding it came
	// from (nil when decoded by this load only), and its place there.
	decodedFrom decodedRefs
	pools       []*MachineConfigPool
	ccs         []*ControllerConfig
	streams     []*osImageStream
	notices     []*Error
	errs        Errors
}

// Fail records problems found outside the objects' bytes (a file that
// could not be read): the Set fails with them.
func (l *Loader) Fail(errs ...*Error) { l.errs.add(errs...) }

// Notice records a notice (a file skipped, say) with the Set's own.
func (l *Loader) Notice(n *Error) { l.notices = append(l.notices, n) }

// Data reads a stream of objects (JSON, or YAML documents) held in memory,
// as if it were the file name; a name ending in .bu is read as Butane.
func (l *Loader) Data(name string, data []byte) { l.decode(name, data) }

// Set returns what was read. Its error, when not nil, is an *Errors listing
// every problem found, in every file.
func (l *Loader) Set() (*Set, error) {
	s, err := l.build()
	l.Cache.sweep()
	if len(l.errs.List) == 0 {
		return s, err
	}
	all := Errors{List: slices.Clone(l.errs.List)}
	var es *Errors
	if errors.As(err, &es) {
		all.add(es.List...)
	}
	return nil, &all
}

// PoolNames lists the pools, sorted.
func (s *Set) PoolNames() []string {
	out := make([]string, len(s.pools))
	for i, p := range s.pools {
		out[i] = p.Metadata.Name
	}
	return out
}

// Pool returns a pool by name, or nil.
func (s *Set) Pool(name string) *MachineConfigPool {
	for _, p := range s.pools {
		if p.Metadata.Name == name {
			return p
		}
	}
	return nil
}

// ControllerConfig returns the tree's ControllerConfig, or nil.
func (s *Set) ControllerConfig() *ControllerConfig { return s.cc }

// MachineConfigs returns the loaded MachineConfigs, sorted by name.
func (s *Set) MachineConfigs() []*MachineConfig {
	out := make([]*MachineConfig, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.mc
	}
	return out
}

// Notices are what Load skipped or found odd without failing: objects of
// other kinds, MachineConfigs no pool selects, Butane and Ignition warnings.
func (s *Set) Notices() []*Error { return s.notices }

// decode reads a stream's objects, or takes them from the cache's kept
// decoding of the same stream (see decodedData).
func (l *Loader) decode(p string, data []byte) {
	k := keepingFor(l, p, data)
	if k.replayed() {
		return
	}
	var objs []rawObject
	var errs []*Error
	if strings.EqualFold(filepath.Ext(p), ".bu") {
		objs, errs = l.butane(p, data)
	} else {
		objs, errs = decodeDocuments(p, data, !l.FromAPIServer)
	}
	l.errs.add(errs...)
	for _, o := range objs {
		l.object(o)
	}
	k.keep()
}

// rawObject is one Kubernetes object as JSON, before its kind is decoded.
type rawObject struct {
	File       string
	JSON       []byte
	Kind       string
	APIVersion string
	Name       string
	doc        *docRef // where it was written; nil when unknown
	// locals, for a Butane file's object, are the local files it embeds
	// (see MachineConfig.Locals).
	locals map[string]string
}

// problem is an *Error about the whole object, named "Kind/name" (the kind
// alone for an object without a name).
func (o rawObject) problem(msg string, err error) *Error {
	x := &Error{File: o.File, Object: o.Kind, Path: convert.NewPath(), Message: msg, Err: err}
	if o.Name != "" {
		x.Object += "/" + o.Name
	}
	x.Line, x.Column = o.doc.pos(x.Path)
	return x
}

// isDocSep says whether a line starts a YAML document: "---" alone or
// followed by a space (as the regexp ^---(\s|$) would; without one: a
// regexp allocates per match where its pool does not reuse, as under the
// race detector, and a stream has a line per file of a config).
func isDocSep(ln []byte) bool {
	if !bytes.HasPrefix(ln, []byte("---")) {
		return false
	}
	if len(ln) == 3 {
		return true
	}
	switch ln[3] {
	case ' ', '\t', '\n', '\f', '\r':
		return true
	}
	return false
}

// splitDocuments splits a YAML stream at "---" lines and returns each
// document with the line it starts on, so errors keep file line numbers.
func splitDocuments(data []byte) (docs [][]byte, starts []int) {
	for _, sp := range DocumentSpans(data) {
		docs = append(docs, data[sp.Start:sp.End])
		starts = append(starts, sp.Line)
	}
	return docs, starts
}

// DocSpan is one document of a YAML stream: data[Start:End], beginning on
// line Line (1-based) of the stream.
type DocSpan struct{ Start, End, Line int }

// DocumentSpans splits a YAML stream at "---" lines (content after "--- "
// on the same line starts the next document) and "..." ends, as the loader
// reads it: tools that edit a file in place count documents and number
// lines alike.
func DocumentSpans(data []byte) []DocSpan {
	var out []DocSpan
	start, line, from := 1, 1, 0
	flush := func(to, next int) {
		out = append(out, DocSpan{from, to, start})
		from, start = next, line+1
	}
	for i := 0; i < len(data); {
		end := bytes.IndexByte(data[i:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += i
		}
		ln := data[i:end]
		switch {
		case isDocSep(ln):
			flush(i, i+3)
			start = line
		case bytes.Equal(bytes.TrimRight(ln, " \t\r"), []byte("...")):
			flush(i, min(end+1, len(data)))
		}
		i = end + 1
		line++
	}
	if from < len(data) {
		out = append(out, DocSpan{from, len(data), start})
	}
	return out
}

// decodeDocuments reads a file's objects: JSON (an object or an array of
// them) or a YAML stream; Lists are flattened. With lines, each object
// keeps where it was written, for problems found later.
func decodeDocuments(file string, data []byte, lines bool) ([]rawObject, []*Error) {
	var out []rawObject
	var errs []*Error
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		errs = appendObjects(&out, file, trimmed, convert.NewPath(), errs, docsIn(data, 1, lines))
		return out, errs
	}
	if len(trimmed) > 0 && strings.EqualFold(filepath.Ext(file), ".json") {
		// A .json file was meant as JSON: its mistake is a JSON one, at
		// its line and column, not whatever YAML makes of it.
		return nil, []*Error{invalidJSON(file, data)}
	}
	docs, starts := splitDocuments(data)
	for i, doc := range docs {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if x := yamlTooLarge(file, doc, starts[i]); x != nil {
			errs = append(errs, x)
			continue
		}
		js, err := intake.YAMLToJSON(doc, starts[i])
		if err != nil {
			x := &Error{File: file, Message: "invalid YAML: " + err.Error(), Err: ErrInvalid}
			var ye *intake.YAMLError
			if errors.As(err, &ye) {
				x.Line, x.Column = ye.Line, ye.Column
			}
			errs = append(errs, x)
			continue
		}
		if bytes.Equal(js, []byte("null")) {
			continue // a document of comments only
		}
		errs = appendObjects(&out, file, js, convert.NewPath(), errs, docsIn(doc, starts[i], lines))
	}
	return out, errs
}

// invalidJSON says where data, which json.Valid refused, goes wrong.
func invalidJSON(file string, data []byte) *Error {
	var v any
	err := json.Unmarshal(data, &v)
	x := &Error{File: file, Message: "invalid JSON", Err: ErrInvalid}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		at := max(0, int(min(se.Offset, int64(len(data))))-1)
		x.Line = 1 + bytes.Count(data[:at], []byte("\n"))
		col := at - bytes.LastIndexByte(data[:at], '\n')
		x.Message = fmt.Sprintf("invalid JSON at line %d, column %d: %v", x.Line, col, err)
	} else if err != nil {
		x.Message = "invalid JSON: " + err.Error()
	}
	return x
}

// docsIn locates objects inside doc, a document starting on line first of
// its file; nil without lines.
func docsIn(doc []byte, first int, lines bool) func(at convert.Path) *docRef {
	if !lines {
		return func(convert.Path) *docRef { return nil }
	}
	return func(at convert.Path) *docRef { return newDocRef(doc, first, at, false) }
}

// appendObjects reads one JSON value: an object (a List's items are read in
// turn) or an array of objects.
func appendObjects(out *[]rawObject, file string, js []byte, at convert.Path, errs []*Error, doc func(at convert.Path) *docRef) []*Error {
	js = bytes.TrimSpace(js)
	if len(js) > 0 && js[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(js, &items); err != nil {
			return append(errs, &Error{File: file, Line: doc(at).line(convert.NewPath()), Path: at, Message: err.Error(), Err: ErrInvalid})
		}
		for i, it := range items {
			errs = appendObjects(out, file, it, at.Append(i), errs, doc)
		}
		return errs
	}
	var head struct {
		APIVersion any `json:"apiVersion"`
		Kind       any `json:"kind"`
		Metadata   struct {
			Name any `json:"name"`
		} `json:"metadata"`
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return append(errs, &Error{File: file, Line: doc(at).line(convert.NewPath()), Path: at, Message: "not a Kubernetes object: " + describeJSON(js), Err: ErrInvalid})
	}
	o := rawObject{File: file, JSON: js, doc: doc(at)}
	o.Kind, _ = head.Kind.(string)
	o.APIVersion, _ = head.APIVersion.(string)
	o.Name, _ = head.Metadata.Name.(string)
	if strings.HasSuffix(o.Kind, "List") && len(head.Items) > 0 && !bytes.Equal(head.Items, []byte("null")) {
		return appendObjects(out, file, head.Items, at.Append("items"), errs, doc)
	}
	*out = append(*out, o)
	return errs
}

func describeJSON(js []byte) string {
	var v any
	_ = json.Unmarshal(js, &v)
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	}
	return "a scalar"
}

// butane translates an openshift-variant Butane file to its MachineConfig
// with l.Butane. A key Butane would drop is an error
// naming its line (see intake.Butane).
func (l *Loader) butane(file string, data []byte) ([]rawObject, []*Error) {
	var head intake.Head
	js, err := intake.YAMLToJSON(data, 1)
	if err == nil {
		err = json.Unmarshal(js, &head)
	}
	if err != nil {
		return nil, []*Error{{File: file, Message: "invalid Butane YAML: " + err.Error(), Err: ErrInvalid}}
	}
	if head.Variant == nil || *head.Variant != "openshift" {
		variant := ""
		if head.Variant != nil {
			variant = *head.Variant
		}
		return nil, []*Error{{File: file, Path: convert.NewPath("variant"), Message: fmt.Sprintf("Butane variant %q does not produce a MachineConfig: use variant openshift", variant), Err: ErrInvalid}}
	}
	name := head.Name()
	obj := KindMachineConfig
	if head.Metadata.Name != "" {
		obj += "/" + head.Metadata.Name
	}
	translate := l.Butane
	if translate == nil {
		translate = func(_, name string, data []byte) ([]byte, []intake.Problem, error) {
			return intake.Butane(name, data, butanecommon.TranslateBytesOptions{})
		}
	}
	out, warnings, err := translate(file, name, data)
	var es *Errors
	if errors.As(err, &es) {
		return nil, es.List
	}
	for _, w := range warnings {
		l.notices = append(l.notices, butaneError(file, obj, name, w, "warning: ", nil))
	}
	var be *intake.ButaneError
	if errors.As(err, &be) {
		errs := make([]*Error, len(be.Problems))
		for i, p := range be.Problems {
			errs[i] = butaneError(file, obj, name, p, "", ErrInvalid)
		}
		return nil, errs
	}
	if err != nil {
		return nil, []*Error{{File: file, Message: err.Error(), Err: errors.Join(ErrInvalid, err)}}
	}
	objs, errs := decodeDocuments(file, out, false)
	for i := range objs {
		objs[i].doc = newDocRef(data, 1, convert.NewPath(), true)
		objs[i].locals = localsOf(file, data)
	}
	return objs, errs
}

// localsOf maps the items a Butane config fills from local files to those
// files, named as the config names them beside file.
func localsOf(file string, data []byte) map[string]string {
	var out map[string]string
	for _, l := range ButaneLocals(data) {
		if l.Item == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[l.Item] = filepath.Join(filepath.Dir(file), filepath.FromSlash(l.Name))
	}
	return out
}

// butaneError names the MachineConfig the Butane file makes (obj) and the
// Butane config's own path, line and column.
func butaneError(file, obj, name string, p intake.Problem, prefix string, err error) *Error {
	return &Error{File: file, Line: p.Line, Column: p.Column, Object: obj, Path: convert.Path{ContextPath: p.Path}, Message: prefix + "butane " + name + ": " + p.Message, Err: err}
}

func (l *Loader) object(o rawObject) {
	g, _, _ := strings.Cut(o.APIVersion, "/")
	ours := o.APIVersion == "" || g == group
	switch {
	case o.Kind == KindMachineConfig && ours:
		l.machineConfig(o)
	case o.Kind == KindMachineConfigPool && ours:
		l.pool(o)
	case o.Kind == kindControllerConfig && ours:
		cc, err := decodeControllerConfig(o)
		keepObject(l, o, cc, err, &l.ccs)
	case o.Kind == kindOSImageStream && ours && o.Name == osImageStreamName:
		st, err := decodeOSImageStream(o)
		keepObject(l, o, st, err, &l.streams)
	case o.Kind == "":
		l.notices = append(l.notices, &Error{File: o.File, Path: convert.NewPath("kind"), Message: "notice: object has no kind; skipped"})
	default:
		if x := kindTypo(o); x != nil && !l.FromAPIServer {
			l.errs.add(x)
			return
		}
		l.notices = append(l.notices, o.problem(fmt.Sprintf("notice: %s %s is not used for rendering; skipped", o.APIVersion, o.Kind), nil))
	}
}

// keepObject adds a decoded object to its list, or its decoding error to the
// loader's.
func keepObject[T any](l *Loader, o rawObject, v T, err error, list *[]T) {
	if err != nil {
		l.errs.add(objectError(o, err))
		return
	}
	*list = append(*list, v)
}

func objectError(o rawObject, err error) *Error {
	x := o.problem(err.Error(), ErrInvalid)
	var fe *fieldError
	if errors.As(err, &fe) {
		x.Path, x.Message = fe.Path, fe.Msg
		x.Line, x.Column = o.doc.pos(x.Path)
	}
	return x
}

// machineConfig decodes a MachineConfig, refusing (in files) or reporting
// (from an API server) the fields it does not know.
func (l *Loader) machineConfig(o rawObject) {
	if x := tooLarge(o); x != nil {
		l.errs.add(x)
		return
	}
	mc := &MachineConfig{Source: o.File, Locals: o.locals}
	if err := json.Unmarshal(o.JSON, mc); err != nil {
		l.errs.add(objectError(o, err))
		return
	}
	if l.refuseUnknown(o, mc.unknownFields()) {
		return
	}
	l.configs = append(l.configs, mc)
	if o.doc != nil {
		if l.docs == nil {
			l.docs = map[*MachineConfig]*docRef{}
		}
		l.docs[mc] = o.doc
	}
}

// refuseUnknown reports the fields of o that its kind has not: in a file
// an error (a typo such as spec.machineConfigSelectr loses what it holds),
// from an API server a warning (a newer release's field). It says whether
// o is refused.
func (l *Loader) refuseUnknown(o rawObject, unknown []convert.Path) bool {
	for _, path := range unknown {
		x := o.problem("", nil)
		x.Path = path
		x.Line, x.Column = o.doc.pos(path)
		if l.FromAPIServer {
			x.Message = "warning: field unknown to this release of mcs (a newer release's?); ignored"
			l.notices = append(l.notices, x)
			continue
		}
		x.Message, x.Err = unknownFieldMessage(o.Kind, path), ErrInvalid
		l.errs.add(x)
	}
	return len(unknown) > 0 && !l.FromAPIServer
}

// pool decodes a MachineConfigPool, refusing (in files) or reporting
// (from an API server) the fields it does not know.
func (l *Loader) pool(o rawObject) {
	p, err := decodePool(o)
	if err == nil && l.refuseUnknown(o, poolUnknownFields(o.JSON, p)) {
		return
	}
	keepObject(l, o, p, err, &l.pools)
}

func decodePool(o rawObject) (*MachineConfigPool, error) {
	var p MachineConfigPool
	if err := json.Unmarshal(o.JSON, &p); err != nil {
		return nil, typeError(err)
	}
	p.Source = o.File
	if fe := p.Spec.MachineConfigSelector.validate(); fe != nil {
		return nil, &fieldError{convert.NewPath("spec", "machineConfigSelector").Append(fe.Path.Path...), fe.Msg}
	}
	return &p, nil
}

// typeError locates a JSON value of the wrong type; other errors pass.
func typeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &fieldError{convert.ParsePath(te.Field), fmt.Sprintf("want %s, got a JSON %s", goKind(te.Type.String()), te.Value)}
	}
	return err
}

func decodeControllerConfig(o rawObject) (*ControllerConfig, error) {
	var c struct {
		Metadata ObjectMeta `json:"metadata"`
		Spec     struct {
			BaseOSContainerImage           string `json:"baseOSContainerImage"`
			BaseOSExtensionsContainerImage string `json:"baseOSExtensionsContainerImage"`
			KubeAPIServerServingCAData     []byte `json:"kubeAPIServerServingCAData"`
			CloudProviderCAData            []byte `json:"cloudProviderCAData"`
			RootCAData                     []byte `json:"rootCAData"`
			Infra                          struct {
				Status infraStatus `json:"status"`
			} `json:"infra"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(o.JSON, &c); err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			return nil, &fieldError{convert.NewPath("spec"), "CA data is not valid base64: " + err.Error()}
		}
		return nil, typeError(err)
	}
	return &ControllerConfig{
		Name:                           c.Metadata.Name,
		BaseOSContainerImage:           c.Spec.BaseOSContainerImage,
		BaseOSExtensionsContainerImage: c.Spec.BaseOSExtensionsContainerImage,
		KubeAPIServerServingCAData:     c.Spec.KubeAPIServerServingCAData,
		CloudProviderCAData:            c.Spec.CloudProviderCAData,
		RootCAData:                     c.Spec.RootCAData,
		ServerURL:                      c.Spec.Infra.Status.serverURL(),
		ReleaseImageVersion:            c.Metadata.Annotations[AnnotationReleaseImageVersion],
		ControllerVersion:              c.Metadata.Annotations[AnnotationControllerConfigVersion],
		Source:                         o.File,
	}, nil
}

// build checks names, parses every Ignition config once, and settles pools.
func (l *Loader) build() (*Set, error) {
	s := &Set{byName: map[string]*entry{}, notices: l.notices, shared: &renderShared{}}
	if l.Cache != nil {
		s.shared = &l.Cache.shared
	}
	var errs Errors

	for n, mc := range l.configs {
		if mc.Metadata.Name == "" {
			errs.add(&Error{File: mc.Source, Line: l.docs[mc].line(convert.NewPath("metadata", "name")), Object: KindMachineConfig, Path: convert.NewPath("metadata", "name"), Message: "MachineConfig has no name", Err: ErrInvalid})
			continue
		}
		if prev, dup := s.byName[mc.Metadata.Name]; dup {
			x := dupError(KindMachineConfig, mc.Metadata.Name, prev.mc.Source, mc.Source)
			x.Line, x.Column = l.docs[mc].pos(x.Path)
			errs.add(x)
			continue
		}
		e := l.decodedFrom.entry(n, mc, l)
		s.byName[mc.Metadata.Name] = e
		s.entries = append(s.entries, e)
	}
	slices.SortFunc(s.entries, func(a, b *entry) int { return strings.Compare(a.mc.Metadata.Name, b.mc.Metadata.Name) })

	seenPool := map[string]*MachineConfigPool{}
	for _, p := range l.pools {
		if p.Metadata.Name == "" {
			errs.add(&Error{File: p.Source, Object: KindMachineConfigPool, Path: convert.NewPath("metadata", "name"), Message: "MachineConfigPool has no name", Err: ErrInvalid})
			continue
		}
		if prev, dup := seenPool[p.Metadata.Name]; dup {
			errs.add(dupError(KindMachineConfigPool, p.Metadata.Name, prev.Source, p.Source))
			continue
		}
		seenPool[p.Metadata.Name] = p
		s.pools = append(s.pools, p)
	}
	if len(l.pools) == 0 {
		s.defaulted = true
		// A made-up pool that selects nothing is left out, so a tree of
		// worker configs alone renders; a pool the tree defines is kept
		// and fails to render, as upstream's does.
		for _, p := range defaultPools() {
			if slices.ContainsFunc(s.entries, func(e *entry) bool { return p.Spec.MachineConfigSelector.matches(e.mc.Metadata.Labels) }) {
				s.pools = append(s.pools, p)
			}
		}
	}
	slices.SortFunc(s.pools, func(a, b *MachineConfigPool) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })

	s.cc = only(l.ccs, &errs, func(cc *ControllerConfig) *Error {
		return dupError(kindControllerConfig, cc.Name, l.ccs[0].Source, cc.Source)
	})
	s.streams = only(l.streams, &errs, func(st *osImageStream) *Error {
		return dupError(kindOSImageStream, osImageStreamName, l.streams[0].source, st.source)
	})

	for _, e := range s.entries {
		selected := false
		for _, p := range s.pools {
			if p.Spec.MachineConfigSelector.matches(e.mc.Metadata.Labels) {
				selected = true
				break
			}
		}
		if !selected {
			if x, isErr := orphan(e, selectors(s.pools, s.defaulted), l.FromAPIServer); isErr {
				errs.add(x)
			} else {
				s.notices = append(s.notices, x)
			}
		}
	}
	if len(errs.List) > 0 {
		return nil, &errs
	}
	return s, nil
}

// only is the first of a singleton's objects (nil when none); each other
// one is an error, dup says which.
func only[T any](list []*T, errs *Errors, dup func(*T) *Error) *T {
	for _, o := range list[min(1, len(list)):] {
		errs.add(dup(o))
	}
	if len(list) == 0 {
		return nil
	}
	return list[0]
}

func dupError(kind, name, first, second string) *Error {
	where := "is also defined in " + orUnknown(first)
	if first != "" && first == second {
		// Not "also defined in" itself: the likely cause is the file
		// read twice (render dir dir, or dir and dir/file).
		where = "is defined twice in this file, or the file is read twice (named twice, or named and inside a directory named too)"
	}
	return &Error{File: second, Object: kind + "/" + name, Path: convert.NewPath("metadata", "name"),
		Message: fmt.Sprintf("duplicate name: %s %q %s", kind, name, where), Err: errDuplicateName}
}

func orUnknown(s string) string {
	if s == "" {
		return "another object"
	}
	return s
}

// defaultPoolSource is the Source of the pools made up when a tree has none.
const defaultPoolSource = "(default pool)"

// defaultPools are upstream's two built-in pools, selecting by role.
func defaultPools() []*MachineConfigPool {
	var out []*MachineConfigPool
	for _, role := range []string{"master", "worker"} {
		out = append(out, &MachineConfigPool{
			APIVersion: APIVersion,
			Kind:       KindMachineConfigPool,
			Metadata:   ObjectMeta{Name: role},
			Spec:       MachineConfigPoolSpec{MachineConfigSelector: &LabelSelector{MatchLabels: map[string]string{roleLabel: role}}},
			Source:     defaultPoolSource,
		})
	}
	return out
}

// NothingToRender is the error for a set with no pool to render, read
// from where ("the tree DIR"), or nil: an empty or mistaken tree must not
// pass as a render of nothing.
func NothingToRender(s *Set, where string) error {
	if len(s.PoolNames()) > 0 {
		return nil
	}
	return fmt.Errorf("nothing to render in %s: no MachineConfigPool, and no MachineConfig with the role label (machineconfiguration.openshift.io/role: master or worker) of a default pool (%d MachineConfigs read from .yaml, .yml, .json and .bu files)",
		where, len(s.MachineConfigs()))
}
