package render

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/ignition/v2/config/validate"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/text"
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
	j, err := s.Job(pool, opts)
	if err != nil {
		return nil, err
	}
	return j.Render()
}

// Job is one pool's render ready to run: its MachineConfigs selected, in
// merge order, and the key of everything the render reads computed from
// that one selection. A source that kept the result of a job with the same
// key may keep it instead of rendering again.
type Job struct{ r renderer }

// Job selects a pool's MachineConfigs and computes its render's key. The
// error, for an unknown pool or invalid options, is an *Errors.
func (s *Set) Job(pool string, opts Options) (*Job, error) {
	p := s.Pool(pool)
	if p == nil {
		return nil, &Errors{List: []*Error{{Object: KindMachineConfigPool + "/" + pool, Message: s.unknownPool(pool), Err: ErrUnknownPool}}}
	}
	opts, err := opts.Normalized()
	if err != nil {
		return nil, &Errors{List: []*Error{{Object: KindMachineConfigPool + "/" + pool, Message: err.Error(), Err: err}}}
	}
	j := &Job{r: renderer{set: s, pool: p, opts: opts}}
	j.r.order = j.r.members()
	stream, serr := s.poolStream(p)
	streamIn := streamInput{Set: stream}
	if serr != nil {
		j.r.errs.add(serr)
		streamIn.Err = serr.Error()
	}
	j.r.stream = stream
	j.r.key = renderKey(p, j.r.order, s.cc, streamIn, opts)
	return j, nil
}

// Key is the key of everything the job's render reads.
func (j *Job) Key() Key { return j.r.key }

// Render runs the job. The error, when not nil, is an *Errors; a spec
// ceiling problem unwraps to a *specCeilingError.
func (j *Job) Render() (*Result, error) {
	r := j.r // a job may be rendered again: its own errors, each time
	r.errs.List = slices.Clone(r.errs.List)
	res := r.run()
	if res != nil {
		res.Key = r.key
	}
	return res, r.errs.orNil()
}

// unknownPool says why pool is not one of the set's, and which are.
func (s *Set) unknownPool(pool string) string {
	return UnknownPool(pool, s.PoolNames(), s.defaulted)
}

// UnknownPool says why pool is not one of pools (the pools a tree has;
// defaulted: made because the tree defines none), which one was likely
// meant, and which there are.
func UnknownPool(pool string, pools []string, defaulted bool) string {
	have := "the pools are " + strings.Join(pools, ", ")
	if len(pools) == 0 {
		have = "there are none"
	}
	unknown := fmt.Sprintf("unknown pool %q", pool)
	if m := text.Closest(pool, pools); m != "" {
		unknown += " (did you mean " + m + "?)"
	}
	if !defaulted {
		return unknown + ": " + have
	}
	if pool != "master" && pool != "worker" {
		return unknown + ": no MachineConfigPool is defined, so only the default pools master and worker can be rendered; " + have
	}
	return fmt.Sprintf("%s: no MachineConfigPool is defined, so the default pools master and worker are made, each only when a MachineConfig has its role label (%s: %s); %s",
		unknown, roleLabel, pool, have)
}

type renderer struct {
	set   *Set
	pool  *MachineConfigPool
	opts  Options
	order []*entry // the pool's MachineConfigs in merge order
	// stream is the OS image stream the pool runs; nil: the
	// ControllerConfig's images.
	stream *osImageStreamSet
	key    Key
	errs   Errors
}

func (r *renderer) poolErr(path convert.Path, msg string, err error) {
	r.errs.add(&Error{File: r.pool.Source, Object: KindMachineConfigPool + "/" + r.pool.Metadata.Name, Path: path, Message: msg, Err: err})
}

func (r *renderer) run() *Result {
	order := r.order
	if len(r.errs.List) > 0 || order == nil {
		return nil
	}
	m := mergeIgnition(order, &r.set.merges)
	spec := r.mergeSpec(order)
	if len(r.errs.List) > 0 {
		return nil
	}
	res, out := r.encode(m, order)
	if out == nil {
		return nil
	}
	r.checkStream(&m.cfg, res.Provenance, &spec, spec.OSImageURL != r.baseImages()[0])
	if len(r.errs.List) > 0 {
		return nil
	}
	spec.Config = out.JSON
	name, err := hashedName(res.Pool, spec, out, &r.set.shared.yaml)
	if err != nil {
		r.poolErr(convert.NewPath(), err.Error(), err)
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

// members are the pool's MachineConfigs in merge order, with the problems
// that fail the render recorded (none selected, one invalid).
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
		r.poolErr(convert.NewPath("spec", "machineConfigSelector"), msg, ErrNoConfigs)
		return nil
	}
	order := mergeOrder(members)
	for _, e := range order {
		r.errs.add(e.problems...)
		if x := unlabelled(e); x != nil {
			r.errs.add(x)
		}
	}
	return order
}

// encode validates the merged config and writes it at the lowest spec the
// options allow, and records why. out is nil when the pool fails. Renders
// run one per pool side by side already: nothing here needs a goroutine.
func (r *renderer) encode(m *merged, order []*entry) (res *Result, out *convert.Encoded) {
	invalid := r.validateMerged(m)
	r.errs.add(invalid...)
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
	enc := convert.NewEncoder(m.cfg, true).Written(res.WrittenModes).Validating(&r.set.shared.valid.items)
	need, reasons := enc.MinVersion()
	res.MinSpec = need
	res.Reasons = r.attribute(m, reasons)

	target, ceiling := r.opts.specFor(need)
	if above := convert.ReasonsAbove(reasons, ceiling); len(above) > 0 {
		r.ceiling(ceiling, need, r.attribute(m, above))
		return nil, nil
	}
	if len(invalid) > 0 {
		return nil, nil
	}
	out, at, top, lost, err := lowestRead(enc, target, ceiling, need)
	if err != nil {
		var ce *convert.CannotExpressError
		if errors.As(err, &ce) {
			r.ceiling(at, need, r.attribute(m, ce.Reasons))
		} else {
			r.poolErr(convert.NewPath(), fmt.Sprintf("cannot write the merged config at spec %s: %v", at, err), err)
		}
		return nil, nil
	}
	if out == nil {
		r.ceiling(ceiling, top, r.attribute(m, lostReasons(lost, reasons, top)))
		return nil, nil
	}
	res.Reasons = append(res.Reasons, r.attribute(m, lostReasons(lost, reasons, at))...)
	res.Spec = at
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
	base := r.baseImages()
	spec.OSImageURL, spec.BaseOSExtensionsContainerImage = base[0], base[1]
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
				path := convert.NewPath("spec", "extensions", i)
				x := &Error{File: e.mc.Source, Object: KindMachineConfig + "/" + e.mc.Metadata.Name, Path: path,
					Message: fmt.Sprintf("extension kernel-devel cannot be installed with kernelType %s (set by MachineConfig %s in pool %s)", spec.KernelType, kernelFrom.mc.Metadata.Name, r.pool.Metadata.Name),
					Err:     ErrInvalid}
				x.Line, x.Column = e.doc.pos(path)
				r.errs.add(x)
			}
		}
	}
	return spec
}

// baseImages are the OS and extensions images the release gives the pool
// (upstream's GetBaseImageContainer, GetBaseExtensionsImageContainer): its
// stream's, else the ControllerConfig's.
func (r *renderer) baseImages() [2]string {
	if r.stream != nil {
		return [2]string{r.stream.OSImage, r.stream.OSExtensionsImage}
	}
	if cc := r.set.cc; cc != nil {
		return [2]string{cc.BaseOSContainerImage, cc.BaseOSExtensionsContainerImage}
	}
	return [2]string{}
}

// validateMerged runs Ignition's validation on the merged config: configs
// valid alone can conflict (a file below another config's link, say).
func (r *renderer) validateMerged(m *merged) []*Error {
	if len(m.steps) == 0 {
		return nil // a single config was validated when it was loaded
	}
	cfg := r.set.shared.valid.sourcesValidated(m.cfg)
	if r.set.shared.valid.items.Passes(cfg) {
		return nil
	}
	var out []*Error
	rpt := validate.ValidateWithContext(cfg, nil)
	for _, e := range rpt.Entries {
		if !e.Kind.IsFatal() {
			continue
		}
		member, q := m.origin(e.Context.Path)
		x := &Error{Message: fmt.Sprintf("%s (in the merged config of pool %s, at %s)", e.Message, r.pool.Metadata.Name, e.Context.String()), Err: ErrInvalid}
		if member >= 0 && member < len(m.order) {
			e := m.order[member]
			at := inConfig(q)
			x.File, x.Object, x.Path = e.mc.Source, KindMachineConfig+"/"+e.mc.Metadata.Name, at
			x.Line, x.Column = e.doc.pos(at)
		} else {
			x.File, x.Object, x.Path = r.pool.Source, KindMachineConfigPool+"/"+r.pool.Metadata.Name, convert.NewPath()
		}
		out = append(out, x)
	}
	return out
}

// sourcesValidated returns cfg with each large data URL among its files'
// contents swapped for a short one, the same for the same URL. Every
// source in a merge is a member's, and each member was validated whole when
// it was loaded: a data URL's validity is its own, and decoding each again
// for every pool's merge was the largest part of validating it. Distinct
// URLs stay distinct, so checks between entries see what they saw; the
// same URL gets the same token in every pool of the set. cfg is not
// changed.
func (v *validItems) sourcesValidated(cfg convert.Config) convert.Config {
	swap := func(r *types.Resource) {
		if r.Source == nil || len(*r.Source) < minSwappedSource || !strings.HasPrefix(*r.Source, "data:") {
			return
		}
		r.Source = v.token(*r.Source)
	}
	files := slices.Clone(cfg.Storage.Files)
	for i := range files {
		swap(&files[i].Contents)
		if len(files[i].Append) > 0 {
			files[i].Append = slices.Clone(files[i].Append)
			for j := range files[i].Append {
				swap(&files[i].Append[j])
			}
		}
	}
	cfg.Storage.Files = files
	return cfg
}

// minSwappedSource: shorter data URLs cost less to decode than to swap.
const minSwappedSource = 512

// attribute names the MachineConfig, and the path inside it, behind each
// reason (a path in the merged config).
func (r *renderer) attribute(m *merged, reasons []convert.Reason) []Reason {
	out := make([]Reason, len(reasons))
	for i, rs := range reasons {
		out[i] = Reason{Reason: rs}
		member, q := m.origin(rs.Path.Path)
		if member >= 0 && member < len(m.order) {
			e := m.order[member]
			out[i].MachineConfig, out[i].Source, out[i].ConfigPath = e.mc.Metadata.Name, e.mc.Source, inConfig(q)
			out[i].Line, out[i].Column = e.doc.pos(out[i].ConfigPath)
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
			if !slices.Contains(seen, v) {
				seen = append(seen, v)
			}
		}
	}
	if len(seen) > 1 {
		res.Warnings = append(res.Warnings, &Error{File: r.pool.Source, Object: KindMachineConfigPool + "/" + r.pool.Metadata.Name, Path: convert.NewPath(),
			Message: fmt.Sprintf("warning: the pool's MachineConfigs were generated by different controller versions (%s); upstream waits until they agree", strings.Join(seen, ", "))})
	}
	if version == "" {
		version = r.opts.ControllerVersion
	}
	if version == "" {
		version = "mcs"
	}
	a[AnnotationGeneratedByController] = version
	if cc := r.set.cc; cc != nil {
		a[AnnotationReleaseImageVersion] = cc.ReleaseImageVersion
	}
	if osImageURL != r.baseImages()[0] {
		a[annotationOSImageURLOverridden] = "true"
	}
	return a
}
