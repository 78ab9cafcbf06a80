package render

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/coreos/ignition/v2/config/validate"
	"github.com/ignition-mcs/mcs/convert"
	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// Render renders every pool, in name order. Pools that fail are left out of
// the results and their problems are in the returned *Errors (nil when all
// rendered).
func (s *Set) Render(opts Options) ([]*Result, *Errors) {
	var out []*Result
	var errs Errors
	for _, p := range s.pools {
		r, err := s.RenderPool(p.Metadata.Name, opts)
		if err != nil {
			var es *Errors
			if errors.As(err, &es) {
				errs.add(es.List...)
			} else {
				errs.add(&Error{Object: KindMachineConfigPool + "/" + p.Metadata.Name, Message: err.Error(), Err: err})
			}
			continue
		}
		out = append(out, r)
	}
	if len(errs.List) == 0 {
		return out, nil
	}
	return out, &errs
}

// RenderPool merges one pool's MachineConfigs as upstream's renderer does and
// writes the result at the lowest spec that can express it within opts. The
// error, when not nil, is an *Errors; a spec ceiling problem unwraps to a
// *specCeilingError.
func (s *Set) RenderPool(pool string, opts Options) (*Result, error) {
	p := s.Pool(pool)
	if p == nil {
		return nil, &Errors{List: []*Error{{Object: KindMachineConfigPool + "/" + pool, Message: s.unknownPool(pool), Err: ErrUnknownPool}}}
	}
	opts, err := opts.Normalized()
	if err != nil {
		return nil, &Errors{List: []*Error{{Object: KindMachineConfigPool + "/" + pool, Message: err.Error(), Err: err}}}
	}
	r := renderer{set: s, pool: p, opts: opts}
	res := r.run()
	return res, r.errs.orNil()
}

// unknownPool says why pool is not one of the set's, and which are.
func (s *Set) unknownPool(pool string) string {
	have := "the pools are " + strings.Join(s.PoolNames(), ", ")
	if len(s.pools) == 0 {
		have = "there are none"
	}
	if !s.defaulted {
		return fmt.Sprintf("unknown pool %q: %s", pool, have)
	}
	if pool != "master" && pool != "worker" {
		return fmt.Sprintf("unknown pool %q: no MachineConfigPool is defined, so only the default pools master and worker can be rendered; %s", pool, have)
	}
	return fmt.Sprintf("unknown pool %q: no MachineConfigPool is defined, so the default pools master and worker are made, each only when a MachineConfig has its role label (%s: %s); %s",
		pool, roleLabel, pool, have)
}

type renderer struct {
	set  *Set
	pool *MachineConfigPool
	opts Options
	errs Errors
}

func (r *renderer) poolErr(path, msg string, err error) {
	r.errs.add(&Error{File: r.pool.Source, Object: KindMachineConfigPool + "/" + r.pool.Metadata.Name, Path: path, Message: msg, Err: err})
}

func (r *renderer) run() *Result {
	order := r.members()
	if order == nil {
		return nil
	}
	m := mergeIgnition(order)
	spec := r.mergeSpec(order)
	if len(r.errs.List) > 0 {
		return nil
	}
	// Validating the merged config reads what translating it reads; neither
	// writes, so the two run side by side.
	invalid := make(chan []*Error, 1)
	go func() { invalid <- r.validateMerged(m) }()
	res, out := r.encode(m, order, invalid)
	if out == nil {
		return nil
	}
	spec.Config = out.JSON
	name, err := hashedName(res.Pool, spec, out)
	if err != nil {
		r.poolErr("$", err.Error(), err)
		return nil
	}
	res.Name = name
	res.MachineConfig = &MachineConfig{
		APIVersion: APIVersion,
		Kind:       KindMachineConfig,
		Metadata:   ObjectMeta{Name: name, Annotations: r.annotations(order, spec.OSImageURL, res)},
		Spec:       spec,
	}
	if x := sizeProblem(res.MachineConfig, order, r.pool.Metadata.Name); x != nil {
		r.errs.add(x)
		return nil
	}
	return res
}

// members are the pool's MachineConfigs in merge order; nil, with the
// problems recorded, when there are none or one is invalid.
func (r *renderer) members() []*entry {
	sel := r.pool.Spec.MachineConfigSelector
	var members []*entry
	for _, e := range r.set.entries {
		if sel.matches(e.mc.Metadata.Labels) {
			members = append(members, e)
		}
	}
	if len(members) == 0 {
		msg := "the selector matches no MachineConfig"
		if sel.empty() {
			msg = "the selector is empty, and an empty selector selects nothing"
		}
		r.poolErr("$.spec.machineConfigSelector", msg, ErrNoConfigs)
		return nil
	}
	order := mergeOrder(members)
	for _, e := range order {
		r.errs.add(e.problems...)
		if x := unlabelled(e); x != nil {
			r.errs.add(x)
		}
	}
	if len(r.errs.List) > 0 {
		return nil
	}
	return order
}

// encode writes the merged config at the lowest spec the options allow, and
// records why. It takes the merged config's validation from invalid before
// it returns, whatever happens: a render that stops early must not leave the
// goroutine behind with a reference to the merged config. out is nil when
// the pool fails.
func (r *renderer) encode(m *merged, order []*entry, invalid <-chan []*Error) (res *Result, out *convert.Encoded) {
	valid := sync.OnceValue(func() bool {
		bad := <-invalid
		r.errs.add(bad...)
		return len(bad) == 0
	})
	defer valid()
	res = &Result{
		Pool:           r.pool.Metadata.Name,
		Config:         m.cfg,
		WrittenModes:   writtenModes(order),
		Options:        r.opts,
		Provenance:     provenance(order, &m.cfg),
		MachineConfigs: names(order),
		Overrides:      overrides(order),
	}
	for _, e := range order {
		res.Warnings = append(res.Warnings, e.warnings...)
	}
	// The merged contents are validated (see validateMerged, or each
	// config's when it was loaded), so the encoder holds the large ones out
	// while the config is translated, encoded and written as the YAML its
	// name is hashed over: that is most of those bytes.
	enc := convert.NewEncoder(m.cfg, true).Written(res.WrittenModes)
	need, reasons := enc.MinVersion()
	res.MinSpec = need
	res.Reasons = r.attribute(m, reasons)

	target, ceiling := r.opts.specFor(need)
	if above := convert.ReasonsAbove(reasons, ceiling); len(above) > 0 {
		valid()
		r.ceiling(ceiling, need, r.attribute(m, above))
		return nil, nil
	}
	out, err := enc.Encode(target, nil)
	if !valid() {
		return nil, nil
	}
	if err != nil {
		var ce *convert.CannotExpressError
		if errors.As(err, &ce) {
			r.ceiling(target, need, r.attribute(m, ce.Reasons))
		} else {
			r.poolErr("$", fmt.Sprintf("cannot write the merged config at spec %s: %v", target, err), err)
		}
		return nil, nil
	}
	res.Spec = target
	return res, out
}

func names(order []*entry) []string {
	out := make([]string, len(order))
	for i, e := range order {
		out[i] = e.mc.Metadata.Name
	}
	return out
}

// mergeSpec merges the non-Ignition fields as upstream does: kernel
// arguments and extensions concatenated in order (not deduplicated), FIPS if
// any asks, the last non-default kernel type, and the release's OS images
// unless a MachineConfig a user wrote (not one a controller generated)
// overrides them, the last one winning.
func (r *renderer) mergeSpec(order []*entry) MachineConfigSpec {
	spec := MachineConfigSpec{KernelArguments: []string{}, Extensions: []string{}, KernelType: kernelTypeDefault}
	if cc := r.set.cc; cc != nil {
		spec.OSImageURL, spec.BaseOSExtensionsContainerImage = cc.BaseOSContainerImage, cc.BaseOSExtensionsContainerImage
	}
	var kernelFrom *entry
	for _, e := range order {
		s := &e.mc.Spec
		spec.KernelArguments = append(spec.KernelArguments, s.KernelArguments...)
		spec.Extensions = append(spec.Extensions, s.Extensions...)
		spec.FIPS = spec.FIPS || s.FIPS
		if s.KernelType == kernelTypeRealtime || s.KernelType == kernelType64kPages {
			spec.KernelType, kernelFrom = s.KernelType, e
		}
		if !e.generated && s.OSImageURL != "" {
			spec.OSImageURL = s.OSImageURL
		}
		if !e.generated && s.BaseOSExtensionsContainerImage != "" {
			spec.BaseOSExtensionsContainerImage = s.BaseOSExtensionsContainerImage
		}
	}
	if spec.KernelType != kernelTypeDefault {
		for _, e := range order {
			if i := slices.Index(e.mc.Spec.Extensions, "kernel-devel"); i >= 0 {
				path := fmt.Sprintf("$.spec.extensions.%d", i)
				r.errs.add(&Error{File: e.mc.Source, Line: e.doc.line(path), Object: KindMachineConfig + "/" + e.mc.Metadata.Name, Path: path,
					Message: fmt.Sprintf("extension kernel-devel cannot be installed with kernelType %s (set by MachineConfig %s in pool %s)", spec.KernelType, kernelFrom.mc.Metadata.Name, r.pool.Metadata.Name),
					Err:     ErrInvalid})
			}
		}
	}
	return spec
}

// validateMerged runs Ignition's validation on the merged config: configs
// valid alone can conflict (a file below another config's link, say).
func (r *renderer) validateMerged(m *merged) []*Error {
	if len(m.steps) == 0 {
		return nil // a single config was validated when it was loaded
	}
	var out []*Error
	rpt := validate.ValidateWithContext(m.cfg, nil)
	for _, e := range rpt.Entries {
		if !e.Kind.IsFatal() {
			continue
		}
		member, q := m.origin(e.Context.Path)
		x := &Error{Message: fmt.Sprintf("%s (in the merged config of pool %s, at %s)", e.Message, r.pool.Metadata.Name, e.Context.String()), Err: ErrInvalid}
		if member >= 0 && member < len(m.order) {
			e := m.order[member]
			x.File, x.Object, x.Path = e.mc.Source, KindMachineConfig+"/"+e.mc.Metadata.Name, configPath(pathString(q))
			x.Line = e.doc.line(x.Path)
		} else {
			x.File, x.Object, x.Path = r.pool.Source, KindMachineConfigPool+"/"+r.pool.Metadata.Name, "$"
		}
		out = append(out, x)
	}
	return out
}

// attribute names the MachineConfig, and the path inside it, behind each
// reason (a path in the merged config).
func (r *renderer) attribute(m *merged, reasons []convert.Reason) []Reason {
	out := make([]Reason, len(reasons))
	for i, rs := range reasons {
		out[i] = Reason{Reason: rs}
		member, q := m.origin(parsePath(rs.Path))
		if member >= 0 && member < len(m.order) {
			e := m.order[member]
			out[i].MachineConfig, out[i].Source, out[i].ConfigPath = e.mc.Metadata.Name, e.mc.Source, configPath(pathString(q))
			out[i].Line = e.doc.line(out[i].ConfigPath)
		}
	}
	return out
}

func (r *renderer) ceiling(ceiling, need convert.Version, reasons []Reason) {
	ce := &specCeilingError{Pool: r.pool.Metadata.Name, Ceiling: ceiling, Needs: need, Reasons: reasons}
	r.errs.add(ce.lines()...)
}

// annotations are upstream's: the controller version that rendered it (that
// of the controller which generated the inputs, so the cluster sees one
// version), the release, and whether the OS image was overridden.
func (r *renderer) annotations(order []*entry, osImageURL string, res *Result) map[string]string {
	a := map[string]string{}
	version := ""
	var seen []string
	for _, e := range order {
		if v := e.mc.Metadata.Annotations[AnnotationGeneratedByController]; v != "" {
			version = v
			if !contains(seen, v) {
				seen = append(seen, v)
			}
		}
	}
	if len(seen) > 1 {
		res.Warnings = append(res.Warnings, &Error{File: r.pool.Source, Object: KindMachineConfigPool + "/" + r.pool.Metadata.Name, Path: "$",
			Message: fmt.Sprintf("warning: the pool's MachineConfigs were generated by different controller versions (%s); upstream waits until they agree", strings.Join(seen, ", "))})
	}
	if version == "" {
		version = r.opts.ControllerVersion
	}
	if version == "" {
		version = "mcs"
	}
	a[AnnotationGeneratedByController] = version
	def := ""
	if cc := r.set.cc; cc != nil {
		a[AnnotationReleaseImageVersion] = cc.ReleaseImageVersion
		def = cc.BaseOSContainerImage
	}
	if osImageURL != def {
		a[annotationOSImageURLOverridden] = "true"
	}
	return a
}

// salt is upstream's: 80 random bytes that prefix what is hashed. Changing it
// would change every rendered name.
var salt = []byte{
	16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110,
	25, 93, 47, 253, 172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52,
	219, 131, 12, 206, 218, 141, 116, 135, 188, 181, 192, 151, 233, 62, 126, 165,
	64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227, 133, 188, 238, 26,
	33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
}

// hashedSpec is upstream's MachineConfigSpec exactly as its API serialises
// it: every field, none omitted, with the config and lists given as the
// YAML writer is to see them. The hash is over its YAML, so a key added
// here, or a renamed one, changes every name.
func hashedSpec(spec MachineConfigSpec, config, kernelArguments, extensions any) map[string]any {
	return map[string]any{
		"osImageURL":                     spec.OSImageURL,
		"baseOSExtensionsContainerImage": spec.BaseOSExtensionsContainerImage,
		"config":                         config,
		"kernelArguments":                kernelArguments,
		"extensions":                     extensions,
		"fips":                           spec.FIPS,
		"kernelType":                     spec.KernelType,
	}
}

// hashedName is upstream's rendered name: "rendered-<pool>-" and the hex MD5
// of the salt followed by the YAML (sigs.k8s.io/yaml: JSON with sorted keys,
// as YAML) of the spec. The same spec bytes give OpenShift's name. Given
// the encoder's output whose JSON is spec.Config (or nil), the YAML is
// written from that (see convert.Encoded.YAML), byte for byte the same.
func hashedName(pool string, spec MachineConfigSpec, enc *convert.Encoded) (string, error) {
	write := func(cfg []byte) ([]byte, error) {
		s := spec
		s.Config = cfg
		return specYAML(s)
	}
	var y []byte
	var err error
	if enc != nil {
		y, err = enc.YAML(write)
	} else {
		y, err = write(spec.Config)
	}
	if err != nil {
		return "", fmt.Errorf("hashing the rendered spec: %w", err)
	}
	h := md5.New()
	h.Write(salt)
	h.Write(y)
	return "rendered-" + pool + "-" + hex.EncodeToString(h.Sum(nil)), nil
}

// specYAML is sigs.k8s.io/yaml.Marshal of upstream's spec, without its
// detour through a YAML parser: that library writes the value as JSON,
// parses the JSON as YAML and writes the tree as YAML; here the tree is
// built straight from the JSON (numbers typed as the YAML parser types
// them) and given to the same YAML writer. The slow path remains for the
// numbers whose typing could differ, and tests prove both agree.
func specYAML(spec MachineConfigSpec) ([]byte, error) {
	// Text the library's YAML reader refuses (invalid UTF-8, DEL and other
	// characters YAML does not allow) takes the slow path, to fail or be
	// written exactly as the library does.
	if !yamlReadable(string(spec.Config)) || !yamlReadable(spec.OSImageURL) || !yamlReadable(spec.BaseOSExtensionsContainerImage) ||
		!yamlReadable(spec.KernelType) || !allYAMLReadable(spec.KernelArguments) || !allYAMLReadable(spec.Extensions) {
		return slowSpecYAML(spec)
	}
	cfg, ok, err := yamlTree(spec.Config)
	if err != nil {
		return nil, err
	}
	if !ok {
		return slowSpecYAML(spec)
	}
	return goyaml.Marshal(hashedSpec(spec, cfg, stringsTree(spec.KernelArguments), stringsTree(spec.Extensions)))
}

// yamlReadable reports whether s is valid UTF-8 made only of characters a
// YAML 1.1 reader accepts (goyaml's is_printable), control characters other
// than tab and line breaks excepted: the JSON encoder escapes those.
func yamlReadable(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return false
		}
		switch {
		case r == 0x85, r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		i += n
	}
	return true
}

func allYAMLReadable(ss []string) bool {
	for _, s := range ss {
		if !yamlReadable(s) {
			return false
		}
	}
	return true
}

func slowSpecYAML(spec MachineConfigSpec) ([]byte, error) {
	var cfg any = spec.Config
	if len(spec.Config) == 0 {
		cfg = json.RawMessage("null")
	}
	return yaml.Marshal(hashedSpec(spec, cfg, spec.KernelArguments, spec.Extensions))
}

// stringsTree is a string list as JSON decoding gives it: a nil list is
// null, which YAML writes as null, not as [].
func stringsTree(s []string) any {
	if s == nil {
		return nil
	}
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// yamlTree decodes JSON into the tree the YAML parser would have built from
// it. ok is false when a number is not a plain integer that fits an int:
// only the YAML parser itself says for sure how it types those.
func yamlTree(js []byte) (any, bool, error) {
	if len(js) == 0 {
		return nil, true, nil
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, err
	}
	ok := retypeNumbers(&v)
	return v, ok, nil
}

func retypeNumbers(v *any) bool {
	switch x := (*v).(type) {
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return false
		}
		n, err := strconv.ParseInt(s, 10, 0)
		if err != nil {
			return false
		}
		*v = int(n)
	case map[string]any:
		for k, e := range x {
			if !retypeNumbers(&e) {
				return false
			}
			x[k] = e
		}
	case []any:
		for i := range x {
			if !retypeNumbers(&x[i]) {
				return false
			}
		}
	}
	return true
}

// encodedSize is len(json.Marshal(mc)) without encoding the config again:
// it is compact JSON already, so it is written as it is.
func encodedSize(mc *MachineConfig) (int, error) {
	shell := *mc
	shell.Spec.Config = json.RawMessage("0")
	b, err := json.Marshal(shell)
	if err != nil {
		return 0, err
	}
	return len(b) - 1 + len(mc.Spec.Config), nil
}
