package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
)

// wholePatch answers what mcs admit answers, but with its operations on
// spec.config replaced by one replace of spec.config whole with the
// lowered config (admit.Lower's, as mcs admit answered before it answered
// only what changed). It counts the patches it rewrote, and any of mcs
// admit's that was not minimal.
type wholePatch struct {
	t        *testing.T
	inner    http.Handler
	mu       sync.Mutex
	rewrote  int
	notSmall []string
}

func (h *wholePatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := new(bytes.Buffer)
	if _, err := body.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := httptest.NewRecorder()
	h.inner.ServeHTTP(rec, httptest.NewRequest(r.Method, r.URL.String(), bytes.NewReader(body.Bytes())))
	var in, out admissionv1.AdmissionReview
	if json.Unmarshal(body.Bytes(), &in) != nil || json.Unmarshal(rec.Body.Bytes(), &out) != nil || in.Request == nil || out.Response == nil {
		h.t.Errorf("not a review, or no answer: %.300s", rec.Body.Bytes())
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	if patch := out.Response.Patch; patch != nil {
		whole, err := wholeOf(in.Request.Object.Raw, patch)
		if err != nil {
			h.t.Errorf("%s: %v", in.Request.Name, err)
		}
		h.mu.Lock()
		h.rewrote++
		if len(patch) > 2000 || bytes.Contains(patch, []byte(`"path":"/spec/config"`)) {
			h.notSmall = append(h.notSmall, in.Request.Name)
		}
		h.mu.Unlock()
		out.Response.Patch = whole
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&out)
}

// wholeOf is patch with its operations on spec.config replaced by one
// replace of spec.config whole with obj's config lowered.
func wholeOf(obj, patch []byte) ([]byte, error) {
	var o struct {
		Spec struct{ Config json.RawMessage }
	}
	var ops []map[string]json.RawMessage
	if err := json.Unmarshal(obj, &o); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, err
	}
	res, err := admit.Lower(o.Spec.Config, convert.Version{})
	if err != nil {
		return nil, err
	}
	out := []map[string]json.RawMessage{{"op": json.RawMessage(`"replace"`), "path": json.RawMessage(`"/spec/config"`), "value": res.Config}}
	for _, op := range ops {
		var path string
		_ = json.Unmarshal(op["path"], &path)
		if path != "/spec/config" && !strings.HasPrefix(path, "/spec/config/") {
			out = append(out, op)
		}
	}
	return json.Marshal(out)
}

// TestMinimalPatchStoresAsWhole creates each of a realdata set's
// MachineConfigs twice through the API server: reviewed by mcs admit,
// which answers only what the review changed, and by the same review
// answering the whole config. The API server stores the same object
// (spec, labels, managedFields but for times) either way.
func TestMinimalPatchStoresAsWhole(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	t.Cleanup(func() { s.cp.DeleteAll(t, machineConfigs) })
	res := s.cp.Dynamic.Resource(machineConfigs)
	whole := &wholePatch{t: t, inner: admit.New(admit.Config{})}
	lowered := 0
	objs := manifests(t, "aws")
	// Lowerings that change more than the version: empty members dropped,
	// a list rewritten.
	for i, config := range []string{
		`{"ignition":{"version":"3.5.0","config":{},"timeouts":{}},"passwd":{},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"},"mode":420}],"directories":[]},"systemd":{"units":[]}}`,
		`{"ignition":{"version":"3.6.0"},"kernelArguments":{"shouldExist":["nosmt"],"shouldNotExist":[]},"storage":{"files":[{"path":"/etc/b","contents":{"source":"data:,b","verification":{}}}]}}`,
	} {
		var cfg map[string]any
		if err := json.Unmarshal([]byte(config), &cfg); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]any{"name": fmt.Sprintf("99-minimal-patch-%d", i)},
			"spec":     map[string]any{"config": cfg},
		}})
	}
	for _, o := range objs {
		s.use(admit.New(admit.Config{}))
		minimal, err := res.Create(ctx, o.DeepCopy(), metav1.CreateOptions{FieldManager: "gitops"})
		if err != nil {
			t.Fatalf("%s: %v", o.GetName(), err)
		}
		s.use(whole)
		w := o.DeepCopy()
		w.SetName(o.GetName() + "-whole")
		full, err := res.Create(ctx, w, metav1.CreateOptions{FieldManager: "gitops"})
		if err != nil {
			t.Fatalf("%s: %v", w.GetName(), err)
		}
		if storedVersion(minimal) != storedVersion(o) {
			lowered++
		}
		if a, b := storedPart(t, minimal), storedPart(t, full); !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			t.Errorf("%s: stored with the minimal patch %.500s\nwith the whole one %.500s", o.GetName(), ja, jb)
		}
	}
	if lowered < 8 || whole.rewrote != lowered {
		t.Errorf("%d configs lowered, %d whole patches answered: the test checks too little", lowered, whole.rewrote)
	}
	if len(whole.notSmall) > 0 {
		t.Errorf("mcs admit answered more than what changed for %v", whole.notSmall)
	}
}

// storedPart is what of a stored MachineConfig a patch decides: its spec,
// labels and managedFields but for times.
func storedPart(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	var owners []any
	for _, m := range o.GetManagedFields() {
		m.Time = nil
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		_ = json.Unmarshal(b, &v)
		owners = append(owners, v)
	}
	return map[string]any{"spec": o.Object["spec"], "labels": o.GetLabels(), "managedFields": owners}
}
