package render

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ignition-mcs/mcs/convert"
)

// FromRendered makes a Result of a MachineConfig a cluster's controller
// rendered (what upstream's server serves): its config re-encoded at the
// lowest spec within opts that expresses it, as RenderPool chooses it, and
// everything else (name, annotations, kernel arguments, OS image) as the
// cluster wrote it, so nodes are annotated with the cluster's own rendered
// name. sources name the MachineConfigs mc was rendered from (the pool's
// status); none names mc itself. mc is not modified. The error, unless opts are invalid, is an
// *Errors; a spec ceiling problem unwraps to a *specCeilingError.
func FromRendered(pool string, mc *MachineConfig, sources []string, opts Options) (*Result, error) {
	opts, err := opts.Normalized()
	if err != nil {
		return nil, err
	}
	object := KindMachineConfig + "/" + mc.Metadata.Name
	bad := func(path convert.Path, msg string, err error) error {
		return &Errors{List: []*Error{{File: mc.Source, Object: object, Path: path, Message: msg, Err: err}}}
	}
	cfg, warnings, err := renderedConfig(mc)
	if err != nil {
		return nil, bad(convert.NewPath("spec", "config"), err.Error(), errors.Join(ErrInvalid, err))
	}
	// Parse validated the config, so the encoder may hold its large
	// contents out of translation.
	enc := convert.NewEncoder(cfg, false)
	need, reasons := enc.MinVersion()
	attribute := func(rs []convert.Reason) []Reason {
		out := make([]Reason, len(rs))
		for i, r := range rs {
			out[i] = Reason{Reason: r, MachineConfig: mc.Metadata.Name, Source: mc.Source, ConfigPath: inConfig(r.Path.Path)}
		}
		return out
	}
	target, ceiling := opts.specFor(need)
	if above := convert.ReasonsAbove(reasons, ceiling); len(above) > 0 {
		return nil, &specCeilingError{Pool: pool, Ceiling: ceiling, Needs: need, Reasons: attribute(above)}
	}
	js, err := enc.Encode(target, nil)
	if err != nil {
		var ce *convert.CannotExpressError
		if errors.As(err, &ce) {
			return nil, &specCeilingError{Pool: pool, Ceiling: target, Needs: need, Reasons: attribute(ce.Reasons)}
		}
		return nil, bad(convert.NewPath("spec", "config"), fmt.Sprintf("cannot write the config at spec %s: %v", target, err), err)
	}
	out := *mc
	out.Spec.Config = js.JSON
	if x := sizeProblem(&out, []*entry{{mc: mc}}, pool); x != nil {
		return nil, &Errors{List: []*Error{x}}
	}
	if len(sources) == 0 {
		sources = []string{mc.Metadata.Name}
	}
	return &Result{
		Pool:           pool,
		Key:            renderedKey(pool, mc, sources, opts),
		Name:           mc.Metadata.Name,
		MachineConfig:  &out,
		Config:         cfg,
		Spec:           target,
		MinSpec:        need,
		Reasons:        attribute(reasons),
		MachineConfigs: sources,
		Options:        opts,
		Warnings:       warnings,
	}, nil
}

// renderedConfig parses a rendered MachineConfig's config; none, {} and
// null (an API object's config may be any of them) are the empty config.
func renderedConfig(mc *MachineConfig) (convert.Config, []*Error, error) {
	raw := bytes.TrimSpace(mc.Spec.Config)
	if len(raw) == 0 || isEmptyObject(raw) || bytes.Equal(raw, []byte("null")) {
		return convert.Config{}, nil, nil
	}
	parsed, err := convert.Parse(raw)
	if err != nil {
		return convert.Config{}, nil, err
	}
	var warnings []*Error
	for _, w := range parsed.Warnings {
		warnings = append(warnings, &Error{File: mc.Source, Object: KindMachineConfig + "/" + mc.Metadata.Name, Path: configPath(w.Path), Message: "warning: " + w.Message})
	}
	return parsed.Config, warnings, nil
}

// SetImage sets the layered OS image the result's nodes boot into (see
// Result.Image), and keys the result with it.
func (r *Result) SetImage(image string) {
	r.Image = image
	k := newKeyer()
	k.bytes(r.Key[:])
	k.string(image)
	r.Key = k.sum()
}
