package kube

import (
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
		return "", nil, &render.Error{File: origin, Object: render.KindMachineConfigPool + "/" + u.GetName(), Path: convert.NewPath("status", "configuration", "name"),
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
		l := render.Loader{FromAPIServer: true}
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
	for _, p := range Objects(s.pools) {
		pool := p.GetName()
		name, sources, err := renderedConfig(p)
		if err != nil {
			fail(pool, err)
			continue
		}
		obj, ok, _ := s.mcs.GetByKey(name)
		u, _ := obj.(*unstructured.Unstructured)
		if !ok || u == nil {
			fail(pool, &render.Error{File: origin, Object: render.KindMachineConfigPool + "/" + pool, Path: convert.NewPath("status", "configuration", "name"),
				Message: fmt.Sprintf("the pool names MachineConfig %s, which does not exist", name), Err: render.ErrNoConfigs})
			continue
		}
		mc, err := decodeMachineConfig(u)
		if err != nil {
			fail(pool, err)
			continue
		}
		// As upstream's appendDesiredOSImage, before anything is encoded:
		// the served MachineConfig names the image.
		image, _ := s.desiredImage(p, name)
		if image != "" {
			mc.Spec.OSImageURL = image
		}
		res, err := render.FromRendered(pool, mc, sources, s.cfg.Options)
		if err != nil {
			fail(pool, err)
			continue
		}
		res.SetImage(image)
		in.Results = append(in.Results, res)
	}
	return in, nil
}

func decodeMachineConfig(u *unstructured.Unstructured) (*render.MachineConfig, error) {
	obj := render.KindMachineConfig + "/" + u.GetName()
	js, err := json.Marshal(u.Object)
	if err != nil {
		return nil, &render.Error{File: origin, Object: obj, Path: convert.NewPath(), Message: "encoding: " + err.Error(), Err: err}
	}
	mc := &render.MachineConfig{Source: origin}
	if err := json.Unmarshal(js, mc); err != nil {
		return nil, &render.Error{File: origin, Object: obj, Message: err.Error(), Err: errors.Join(render.ErrInvalid, err)}
	}
	return mc, nil
}
