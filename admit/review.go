package admit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/text"
)

// OpenShift's own writers of MachineConfigs: never refused.
var openShiftWriters = map[string]bool{
	"system:serviceaccount:openshift-machine-config-operator:machine-config-controller": true,
	"system:serviceaccount:openshift-machine-config-operator:machine-config-operator":   true,
}

// machineConfigs is what the webhook rewrites; anything else it is sent
// passes untouched.
const mcGroup, mcResource = "machineconfiguration.openshift.io", "machineconfigs"

// Outcomes of a review, for metrics and /status.
const (
	outcomeLowered   = "lowered"   // patched to a lower spec
	outcomeUnchanged = "unchanged" // already at its lowest spec, or empty
	outcomeDenied    = "denied"    // above the ceiling, refused
	outcomeIgnored   = "ignored"   // not a MachineConfig CREATE or UPDATE
	outcomeBad       = "bad"       // not an AdmissionReview the webhook can answer
	// and PassSpec2, PassInvalid, PassRefused, PassUnprovable
)

// maxListed bounds the fields named in a warning or refusal.
const maxListed = 5

// verdict is what one review decided, beyond the response.
type verdict struct {
	outcome   string
	above     bool   // needs more than the ceiling
	openShift bool   // written by OpenShift's own controllers
	name      string // the MachineConfig
	message   string // the above-ceiling text
}

// reviewed holds the parts of a MachineConfig a review reads.
type reviewed struct {
	Metadata struct {
		Name         string    `json:"name"`
		GenerateName string    `json:"generateName"`
		UID          types.UID `json:"uid"`
		// ManagedFields are the field managers' entries, for the
		// patch to take the fields it rewrites out of them.
		ManagedFields json.RawMessage `json:"managedFields"`
	} `json:"metadata"`
	Spec struct {
		Config json.RawMessage `json:"config"`
	} `json:"spec"`
}

// reviewIn is an AdmissionReview v1 as a review reads it, decoded in one
// pass with the MachineConfig's parts: admissionv1's types hold the object
// as bytes, to be decoded a second time, and a rendered config is large.
type reviewIn struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Request    *request `json:"request"`
}

// request is what a review reads of an AdmissionRequest.
type request struct {
	UID         types.UID                   `json:"uid"`
	Resource    metav1.GroupVersionResource `json:"resource"`
	SubResource string                      `json:"subResource"`
	Name        string                      `json:"name"`
	Operation   admissionv1.Operation       `json:"operation"`
	UserInfo    struct {
		Username string `json:"username"`
	} `json:"userInfo"`
	DryRun *bool    `json:"dryRun"`
	Object reviewed `json:"object"`
	// objectErr says why the object does not decode as a MachineConfig;
	// body is the review, for the whole objects an UPDATE compares.
	objectErr error
	body      []byte
}

// decodeReview reads an AdmissionReview v1 request.
func decodeReview(body []byte) (*reviewIn, error) {
	in, ok := scanReview(body)
	if !ok {
		in = reviewIn{}
		if err := json.Unmarshal(body, &in); err != nil {
			if in, err = decodeInTwo(body); err != nil {
				return nil, err
			}
		}
	}
	if in.APIVersion != "admission.k8s.io/v1" || in.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("want an admission.k8s.io/v1 AdmissionReview, not %s %s", in.APIVersion, in.Kind)
	}
	if in.Request == nil || in.Request.UID == "" {
		return nil, errors.New("the AdmissionReview has no request, or no request uid")
	}
	in.Request.body = body
	return &in, nil
}

// decodeInTwo reads a review that does not decode in one pass: as an
// AdmissionReview, then its object, to tell an object that is not a
// MachineConfig (stored as written, with a warning) from a body that is not
// a review.
func decodeInTwo(body []byte) (reviewIn, error) {
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &r); err != nil {
		return reviewIn{}, fmt.Errorf("not an AdmissionReview: %w", err)
	}
	in := reviewIn{APIVersion: r.APIVersion, Kind: r.Kind}
	if q := r.Request; q != nil {
		in.Request = &request{UID: q.UID, Resource: q.Resource, SubResource: q.SubResource, Name: q.Name, Operation: q.Operation, DryRun: q.DryRun}
		in.Request.UserInfo.Username = q.UserInfo.Username
		in.Request.objectErr = json.Unmarshal(q.Object.Raw, &in.Request.Object)
	}
	return in, nil
}

// review decides one request given the ceiling and whether to refuse
// writes above it, within ctx (the review's budget); lc is a cache of
// lower.
func review(ctx context.Context, req *request, c Ceiling, deny bool, lc *lowerCache) (*admissionv1.AdmissionResponse, verdict) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	v := verdict{outcome: outcomeIgnored, openShift: openShiftWriters[req.UserInfo.Username]}
	if req.Resource.Group != mcGroup || req.Resource.Resource != mcResource || req.SubResource != "" ||
		(req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return resp, v
	}
	if req.objectErr != nil {
		v.outcome = PassInvalid
		resp.Warnings = []string{fmt.Sprintf("MachineConfig %s: stored as written: the object does not decode: %v", orUnnamed(req.Name), req.objectErr)}
		return resp, v
	}
	mc := &req.Object
	v.name = firstOf(mc.Metadata.Name, req.Name, mc.Metadata.GenerateName+"*")
	res, err := lc.lower(ctx, mc.Spec.Config, c.Spec, c.Reads)
	var pe *PassError
	switch {
	case errors.As(err, &pe):
		v.outcome = pe.Kind
		resp.Warnings = append(resp.Warnings, passWarnings(v.name, mc.Spec.Config, pe)...)
	case err != nil:
		v.outcome = PassInvalid // Lower fails with PassErrors only
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("MachineConfig %s: spec.config stored as written: %v", v.name, err))
	case res.Changed():
		v.outcome = outcomeLowered
		resp.Patch = loweringPatch(req, res, lc)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	default:
		v.outcome = outcomeUnchanged
	}
	if len(res.Above) == 0 {
		return resp, v
	}
	v.above = true
	v.message = aboveText(v.name, res, c)
	resp.Warnings = append(resp.Warnings, aboveWarnings(v.name, res, c)...)
	if deny && !v.openShift {
		v.outcome = outcomeDenied
		resp.Allowed, resp.Patch, resp.PatchType = false, nil, nil
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: v.message + ". " + denyRemedy(res, c)}
	}
	return resp, v
}

// loweringPatch is the JSON patch storing res for req: what the rewrite
// changed in spec.config (to the lowered config, or the stored one, see
// noOpUpdate), and the fields it changed owned by no one (see owners.go).
func loweringPatch(req *request, res *Result, lc *lowerCache) []byte {
	sent := req.Object.Spec.Config
	var last []byte
	var lastDiff *configDiff
	changed := func(stored []byte) configDiff { // asked twice of a stored config
		if lastDiff == nil || !bytes.Equal(stored, last) {
			d := changedFields(sent, stored)
			last, lastDiff = stored, &d
		}
		return *lastDiff
	}
	value := res.Config
	if req.Operation == admissionv1.Update {
		fields := func(stored []byte) fieldTree { return changed(stored).fields }
		if c, mf := noOpUpdate(req, res, lc.same, fields); mf != nil {
			return patchConfig(c, changed(c), mf, nil)
		} else if c != nil {
			value = c
		}
	}
	d := changed(value)
	_, ops := unown(decodeValue(req.Object.Metadata.ManagedFields), d.fields)
	return patchConfig(value, d, nil, ops)
}

// noOpUpdate makes an UPDATE that changes nothing but spec.config's
// encoding store nothing. OpenShift's render controller re-applies its
// 3.5.0 bytes on every pool sync; lowered, they are the config stored, so
// the stored config is kept (whatever encoding stored it: an older
// webhook's, say): the patch takes the sent config to it, member by member. And since the API server records field ownership before
// mutating admission, the request's managedFields carry a new time for the
// re-applying manager, and the fields the rewrite changes owned by it:
// where, those taken out again (changed names them), they and everything
// else equal the stored object's but for times, the stored managedFields
// are returned to be restored, so the API server writes nothing. Both
// results are nil where unneeded. same is whether a stored config is the
// lowered one (a cache of storedMatches).
func noOpUpdate(req *request, res *Result, same func(stored []byte, res *Result) bool, changed func(stored []byte) fieldTree) (config, managedFields []byte) {
	obj, old := objects(req.body)
	if obj == nil || old == nil || old.spec["config"] == nil || obj.spec == nil || !same(old.spec["config"], res) {
		return nil, nil
	}
	config = old.spec["config"]
	mOld := old.meta["managedFields"]
	mNew, _ := unown(obj.meta["managedFields"], changed(config))
	if mOld == nil || !sameOwners(mNew, mOld) {
		return config, nil
	}
	obj.meta["managedFields"] = mOld
	if !reflect.DeepEqual(obj.meta, old.meta) || !sameMembers(obj.top, old.top, "metadata", "spec") || !sameMembers(obj.spec, old.spec, "config") {
		return config, nil
	}
	managedFields, _ = json.Marshal(mOld)
	return config, managedFields
}

// parts is an object split to be compared: its members and its spec's as
// sent, its metadata decoded (numbers kept as written).
type parts struct {
	top, spec map[string]json.RawMessage
	meta      map[string]any
}

// objects are an UPDATE's object and old object split, or nil where one
// is not an object. The body is JSON (decodeReview checked it), so it is
// scanned (memberMap), not decoded again: the two objects hold a rendered
// config each, whose hundreds of kilobytes encoding/json would check
// and skip a byte at a time, three times over.
func objects(body []byte) (obj, old *parts) {
	top, ok := memberMap(body)
	if !ok {
		return nil, nil
	}
	req, ok := memberMap(top["request"])
	if !ok {
		return nil, nil
	}
	return split(req["object"]), split(req["oldObject"])
}

// split splits an object's members, or is nil where it is not an object.
func split(obj []byte) *parts {
	top, ok := memberMap(obj)
	if !ok {
		return nil
	}
	p := parts{top: top}
	if s, ok := p.top["spec"]; ok && !bytes.Equal(bytes.TrimSpace(s), []byte("null")) {
		if p.spec, ok = memberMap(s); !ok {
			return nil
		}
	}
	if m, ok := p.top["metadata"]; ok {
		if p.meta = decodeObject(m); p.meta == nil {
			return nil
		}
	}
	return &p
}

// memberMap is a JSON object's members by name, the last of a name
// repeated (as encoding/json keeps a map's), or false where it is not an
// object; for JSON known to be valid (see members). Names match exactly,
// where encoding/json folds a struct field's case and merges a member
// given twice: a body that differs so (the API server sends none) finds
// no object and is answered without the no-op, a patch as any UPDATE.
func memberMap(obj []byte) (map[string]json.RawMessage, bool) {
	ms, err := members(obj)
	if err != nil {
		return nil, false
	}
	m := make(map[string]json.RawMessage, len(ms))
	for _, x := range ms {
		m[x.name] = x.value
	}
	return m, true
}

// sameMembers reports whether two objects' members, but those skipped,
// are the same JSON: the same bytes (one API server wrote both), else the
// same values.
func sameMembers(a, b map[string]json.RawMessage, skip ...string) bool {
	n := 0
	for k, va := range a {
		if slices.Contains(skip, k) {
			continue
		}
		n++
		vb, ok := b[k]
		if !ok || !bytes.Equal(va, vb) && !reflect.DeepEqual(decodeValue(va), decodeValue(vb)) {
			return false
		}
	}
	for k := range b {
		if !slices.Contains(skip, k) {
			n--
		}
	}
	return n == 0
}

// storedMatches reports whether a stored config is the lowered one: the same
// JSON value, or the same config at the same spec, written otherwise.
func storedMatches(stored []byte, res *Result) bool {
	return reflect.DeepEqual(decodeValue(res.Config), decodeValue(stored)) || storedIsLowered(stored, res)
}

// storedIsLowered reports whether a stored config is the lowered one at the
// same spec, written otherwise.
func storedIsLowered(stored []byte, res *Result) bool {
	po, err := convert.Parse(stored)
	if err != nil || po.Version != res.Stored {
		return false
	}
	pn, err := convert.Parse(res.Config)
	if err != nil {
		return false
	}
	a, err1 := convert.Marshal(po.Config, false)
	b, err2 := convert.Marshal(pn.Config, false)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// decodeObject decodes a JSON object (numbers kept as written), or nil.
func decodeObject(raw []byte) map[string]any {
	m, _ := decodeValue(raw).(map[string]any)
	return m
}

// decodeValue decodes JSON (numbers kept as written), or nil.
func decodeValue(raw []byte) any {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil
	}
	return v
}

// patchConfig is a JSON patch taking spec.config to config: d's
// operations (only what differs, at the deepest member: a 168 KB rendered
// config lowered is one operation of a few dozen bytes, which the API
// server decodes and applies in microseconds), or where d is to be
// replaced whole, one replace; then, when not nil, one replace of
// metadata.managedFields (see noOpUpdate), then the operations ops;
// nothing else.
func patchConfig(config []byte, d configDiff, managedFields []byte, ops []string) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	sep := func() {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
	}
	if d.whole {
		b.WriteString(`{"op":"replace","path":"` + configPointer + `","value":`)
		b.Write(config)
		b.WriteString(`}`)
	} else {
		for _, op := range d.ops {
			sep()
			b.WriteString(op)
		}
	}
	if managedFields != nil {
		sep()
		b.WriteString(`{"op":"replace","path":"/metadata/managedFields","value":`)
		b.Write(managedFields)
		b.WriteString(`}`)
	}
	for _, op := range ops {
		sep()
		b.WriteString(op)
	}
	b.WriteString(`]`)
	return b.Bytes()
}

// aboveWarnings is one warning per field above the ceiling (oc and kubectl
// print each on its own line), at most maxListed.
func aboveWarnings(name string, res *Result, c Ceiling) []string {
	var out []string
	for i, r := range res.Above {
		if i == maxListed {
			out = append(out, fmt.Sprintf("MachineConfig %s: %d more fields need a spec above %s", name, len(res.Above)-maxListed, c.Spec))
			break
		}
		if l, ok := lostAt(res.Lost, r.Path); ok {
			out = append(out, fmt.Sprintf("MachineConfig %s: %s: %s: kept at Ignition spec %s, above the ceiling %s, which %s reads up to: stored at %s, %s would read it otherwise (%s); drop or change the field to store it within the ceiling, or keep it knowing that a rollback cannot read this MachineConfig",
				name, machinePath(r.Path), r.What, r.Version, c.Spec, c.Reader, l.Stored, l.Reader.Who, l.Message))
			continue
		}
		out = append(out, fmt.Sprintf("MachineConfig %s: %s: %s need%s Ignition spec %s; %s reads only up to %s",
			name, machinePath(r.Path), r.What, text.VerbS(r.What), r.Version, c.Reader, c.Spec))
	}
	return out
}

// lostAt is the first of lost at path p.
func lostAt(lost []convert.Loss, p convert.Path) (convert.Loss, bool) {
	for _, l := range lost {
		if l.Path.String() == p.String() {
			return l, true
		}
	}
	return convert.Loss{}, false
}

// aboveText is the refusal (and Event) text: every field above the ceiling.
func aboveText(name string, res *Result, c Ceiling) string {
	fields := make([]string, 0, min(len(res.Above), maxListed))
	for i, r := range res.Above {
		if i == maxListed {
			fields = append(fields, fmt.Sprintf("and %d more", len(res.Above)-maxListed))
			break
		}
		if l, ok := lostAt(res.Lost, r.Path); ok {
			fields = append(fields, fmt.Sprintf("%s (%s, spec %s: %s reads it otherwise at %s)", machinePath(r.Path), r.What, r.Version, l.Reader.Who, l.Stored))
			continue
		}
		fields = append(fields, fmt.Sprintf("%s (%s, spec %s)", machinePath(r.Path), r.What, r.Version))
	}
	need := res.Needs
	for _, r := range res.Above {
		if need.Less(r.Version) {
			need = r.Version
		}
	}
	return fmt.Sprintf("MachineConfig %s needs Ignition spec %s, above the ceiling %s: %s could not read it; fields: %s",
		name, need, c.Spec, c.Reader, strings.Join(fields, "; "))
}

// machinePath places a path of the config inside the MachineConfig.
func machinePath(p convert.Path) string {
	return "$.spec.config" + strings.TrimPrefix(p.String(), "$")
}

func orUnnamed(name string) string { return firstOf(name, "(unnamed)") }

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" && x != "*" {
			return x
		}
	}
	return ""
}
