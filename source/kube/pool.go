package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source"
)

// renderedConfig is the rendered MachineConfig a new node of the pool gets,
// chosen as upstream's server chooses it: the pool's target
// (spec.configuration) once at least one machine has updated to it, else
// the configuration its machines run (status.configuration). Upstream gives
// a pool with no status configuration an error; this falls back to the
// target, which is what the pool's first machines will run. sources lists
// the MachineConfigs the controller rendered it from.
func renderedConfig(u *unstructured.Unstructured) (name string, sources []string, err error) {
	updated, err := count(u.Object, "status", "updatedMachineCount")
	if err != nil {
		return "", nil, err
	}
	from := "status"
	if updated > 0 {
		from = "spec"
	}
	name, _, _ = unstructured.NestedString(u.Object, from, "configuration", "name")
	if name == "" && from == "status" {
		from = "spec"
		name, _, _ = unstructured.NestedString(u.Object, from, "configuration", "name")
	}
	if name == "" {
		return "", nil, &render.Error{File: Origin, Object: render.KindMachineConfigPool + "/" + u.GetName(), Path: "$.status.configuration.name",
			Message: "the pool names no rendered MachineConfig yet (neither status.configuration nor spec.configuration)", Err: render.ErrNoConfigs}
	}
	srcs, _, _ := unstructured.NestedSlice(u.Object, from, "configuration", "source")
	for _, s := range srcs {
		if m, ok := s.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				sources = append(sources, n)
			}
		}
	}
	return name, sources, nil
}

// count reads an integer field, which the JSON decoder gives as int64 (or
// float64 from other decoders); absent is 0.
func count(obj map[string]any, path ...string) (int64, error) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
	if !ok || v == nil {
		return 0, nil
	}
	switch n := v.(type) {
	case int64:
		return n, nil
	case float64:
		return int64(n), nil
	}
	return 0, fmt.Errorf("$.%s: want an integer, got %T", joinPath(path), v)
}

func joinPath(p []string) string { return strings.Join(p, ".") }

// loadPool serves, for every pool, the rendered MachineConfig it names. A
// pool whose rendered config is missing or unservable fails alone.
func (s *Source) loadPool() (*source.Input, error) {
	in := &source.Input{}
	if u := s.controllerConfig(); u != nil {
		var l render.Loader
		if err := feed(&l, u); err != nil {
			return nil, err
		}
		set, err := l.Set()
		if err != nil {
			return nil, err
		}
		in.ControllerConfig = set.ControllerConfig()
	}
	fail := func(pool string, err error) {
		if in.Failed == nil {
			in.Failed = map[string]error{}
		}
		in.Failed[pool] = err
	}
	for _, p := range objects(s.pools) {
		pool := p.GetName()
		name, sources, err := renderedConfig(p)
		if err != nil {
			fail(pool, err)
			continue
		}
		obj, ok, _ := s.mcs.GetByKey(name)
		u, _ := obj.(*unstructured.Unstructured)
		if !ok || u == nil {
			fail(pool, &render.Error{File: Origin, Object: render.KindMachineConfigPool + "/" + pool, Path: "$.status.configuration.name",
				Message: fmt.Sprintf("the pool names MachineConfig %s, which does not exist", name), Err: render.ErrNoConfigs})
			continue
		}
		mc, err := decodeMachineConfig(u)
		if err != nil {
			fail(pool, err)
			continue
		}
		res, err := Rendered(pool, mc, s.cfg.Options)
		if err != nil {
			fail(pool, err)
			continue
		}
		if len(sources) > 0 {
			res.MachineConfigs = sources
		}
		in.Results = append(in.Results, res)
	}
	return in, nil
}

func decodeMachineConfig(u *unstructured.Unstructured) (*render.MachineConfig, error) {
	obj := render.KindMachineConfig + "/" + u.GetName()
	js, err := json.Marshal(u.Object)
	if err != nil {
		return nil, &render.Error{File: Origin, Object: obj, Path: "$", Message: "encoding: " + err.Error(), Err: err}
	}
	mc := &render.MachineConfig{Source: Origin}
	if err := json.Unmarshal(js, mc); err != nil {
		return nil, &render.Error{File: Origin, Object: obj, Message: err.Error(), Err: errors.Join(render.ErrInvalid, err)}
	}
	return mc, nil
}

// Rendered makes a Result of an already rendered MachineConfig: its config
// re-encoded at the lowest spec within opts that expresses it, everything
// else (name, annotations, kernel arguments, OS image) as the cluster
// wrote it, so nodes are annotated with the cluster's own rendered name.
func Rendered(pool string, mc *render.MachineConfig, opts render.Options) (*render.Result, error) {
	opts, err := normalized(opts)
	if err != nil {
		return nil, err
	}
	object := render.KindMachineConfig + "/" + mc.Metadata.Name
	bad := func(path, msg string, err error) error {
		return &render.Errors{List: []*render.Error{{File: mc.Source, Object: object, Path: path, Message: msg, Err: err}}}
	}
	var cfg convert.Config
	var warnings []*render.Error
	raw := bytes.TrimSpace(mc.Spec.Config)
	if len(raw) > 0 && !isEmptyObject(raw) {
		parsed, err := convert.Parse(raw)
		if err != nil {
			return nil, bad("$.spec.config", err.Error(), errors.Join(render.ErrInvalid, err))
		}
		cfg = parsed.Config
		for _, w := range parsed.Warnings {
			warnings = append(warnings, &render.Error{File: mc.Source, Object: object, Path: configPath(w.Path), Message: "warning: " + w.Message})
		}
	}
	need, reasons := convert.MinVersion(&cfg)
	attribute := func(rs []convert.Reason) []render.Reason {
		out := make([]render.Reason, len(rs))
		for i, r := range rs {
			out[i] = render.Reason{Reason: r, MachineConfig: mc.Metadata.Name, Source: mc.Source, ConfigPath: configPath(r.Path)}
		}
		return out
	}
	// The spec choice is the renderer's (render.Set.RenderPool).
	target, ceiling := opts.MinSpec, opts.MaxSpec
	if target.Less(need) {
		target = need
	}
	if !opts.Spec.IsZero() {
		target, ceiling = opts.Spec, opts.Spec
	}
	if ceiling.Major == 2 && ceiling.Less(target) {
		target = ceiling
	}
	if above := convert.ReasonsAbove(reasons, ceiling); len(above) > 0 {
		return nil, &render.SpecCeilingError{Pool: pool, Ceiling: ceiling, Needs: need, Reasons: attribute(above)}
	}
	typed, err := convert.Translate(&cfg, target)
	if err != nil {
		var ce *convert.CannotExpressError
		if errors.As(err, &ce) {
			return nil, &render.SpecCeilingError{Pool: pool, Ceiling: target, Needs: need, Reasons: attribute(ce.Reasons)}
		}
		return nil, bad("$.spec.config", fmt.Sprintf("cannot write the config at spec %s: %v", target, err), err)
	}
	js, err := convert.Marshal(typed, false)
	if err != nil {
		return nil, bad("$.spec.config", "encoding: "+err.Error(), err)
	}
	out := *mc
	out.Spec.Config = js
	if n, err := json.Marshal(&out); err != nil {
		return nil, bad("$", "encoding: "+err.Error(), err)
	} else if len(n) > render.MaxRenderedSize {
		return nil, bad("$", fmt.Sprintf("the rendered MachineConfig is %d bytes of JSON, above the limit of %d", len(n), render.MaxRenderedSize), render.ErrInvalid)
	}
	return &render.Result{
		Pool:           pool,
		Name:           mc.Metadata.Name,
		MachineConfig:  &out,
		Config:         cfg,
		Spec:           target,
		MinSpec:        need,
		Reasons:        attribute(reasons),
		MachineConfigs: []string{mc.Metadata.Name},
		Options:        opts,
		Warnings:       warnings,
	}, nil
}

// normalized fills in the renderer's defaults and checks the bounds as it
// does, so both modes refuse the same options.
func normalized(o render.Options) (render.Options, error) {
	if o.MinSpec.IsZero() {
		o.MinSpec = render.DefaultMinSpec
	}
	if o.MaxSpec.IsZero() {
		o.MaxSpec = convert.Newest
	}
	for _, v := range []struct {
		name string
		v    convert.Version
	}{{"minimum spec", o.MinSpec}, {"maximum spec", o.MaxSpec}, {"spec", o.Spec}} {
		if !v.v.IsZero() && !convert.IsOutputVersion(v.v) {
			return o, fmt.Errorf("%w: %s %s cannot be written", render.ErrOptions, v.name, v.v)
		}
	}
	if o.MaxSpec.Less(o.MinSpec) {
		return o, fmt.Errorf("%w: maximum spec %s is below minimum spec %s", render.ErrOptions, o.MaxSpec, o.MinSpec)
	}
	return o, nil
}

func configPath(p string) string {
	if p == "" || p == "$" {
		return "$.spec.config"
	}
	return "$.spec.config" + strings.TrimPrefix(p, "$")
}

func isEmptyObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && len(m) == 0
}
