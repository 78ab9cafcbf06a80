package admit_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/procstat"
	"github.com/ignition-mcs/mcs/internal/testpki"
)

// patchHook is the floor of a webhook that patches: it reads and decodes
// the review as the null webhook does, then answers the patch mcs admit
// answered for the object of that name, computed before the create, with
// no review at all. (c)/(b), mcs admit against it, is what the review
// itself costs a writer: the API server's work on the review, the round
// trip, the answer and its patch is the same in both.
type patchHook struct {
	mu      sync.Mutex
	patches map[string][]byte // by object name
	missed  int
}

func (h *patchHook) set(name string, patch []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.patches[name] = patch
}

func (h *patchHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	patch := h.patches[in.Request.Name]
	if patch == nil {
		h.missed++
	}
	h.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
	if patch != nil {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp})
}

// serve serves h over TLS (HTTP/2, as the API server calls webhooks) until
// the benchmark ends; its handler's time is patch_handler_seconds on reg.
func (h *patchHook) serve(tb testing.TB, reg prometheus.Registerer) (string, []byte) {
	tb.Helper()
	ca := testpki.NewCA(tb)
	took := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "patch_handler_seconds"})
	reg.MustRegister(took)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		took.Observe(time.Since(start).Seconds())
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Serving(tb).TLS(tb)}, NextProtos: []string{"h2", "http/1.1"}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv.URL + "/patch", ca.PEM
}

// patchOf is the patch mcs admit answers for the create of u, from a
// webhook of its own (the measured one's cache must not see the content).
func patchOf(tb testing.TB, wh http.Handler, u *unstructured.Unstructured) []byte {
	tb.Helper()
	raw, err := u.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	rec := httptest.NewRecorder()
	wh.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, admit.MutatePath, bytes.NewReader(reviewOf(tb, raw))))
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil || len(out.Response.Patch) == 0 {
		tb.Fatalf("no patch for %s: %d %.300s", u.GetName(), rec.Code, rec.Body.Bytes())
	}
	return out.Response.Patch
}

// apiserverPID is the pid of the kube-apiserver this process started.
func apiserverPID(tb testing.TB) int {
	tb.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if bytes.Contains(b[:i], []byte("(kube-apiserver")) && len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			return pid
		}
	}
	tb.Fatal("no kube-apiserver started by this process")
	return 0
}

// createKinds are the creates each iteration makes, in rotation: (c) mcs
// admit reviews it, (b) the patch floor answers mcs admit's patch,
// "minpatch" the patch floor answers a patch of only what mcs admit's
// changes (the same object stored: what the patch's shape costs the API
// server), the null webhook answers "allowed", (a) no webhook sees it.
var createKinds = []string{"webhook", "patch", "minpatch", "null", "none"}

// cost is one create's: its wall time, this process's CPU (the client and
// the webhooks) and the API server's.
type cost struct{ wall, self, apiserver time.Duration }

// creates makes the benchmark's MachineConfigs and creates them.
type creates struct {
	b       *testing.B
	res     dynamic.ResourceInterface
	pid     int          // the API server's
	ref     http.Handler // mcs admit of its own, for the patch floor's patches
	patches *patchHook
	mc      *unstructured.Unstructured
	// run names this run's objects: -count runs this again with the same
	// webhook, whose lowering cache must not have seen the contents.
	run        string
	wantConfig map[string][]byte // a minimal patch's object: the full patch's
	patchBytes map[string]int    // the last patch's size, by kind
}

// object is iteration i's MachineConfig of kind: new content (a file
// named by the iteration), as a new rendered config is; the patch floor's
// patch for it is made here, before it is created.
func (c *creates) object(i int, kind string) *unstructured.Unstructured {
	u := c.mc.DeepCopy()
	u.SetName(fmt.Sprintf("bench-%s-%d-%s", c.run, i, kind))
	u.SetLabels(map[string]string{"bench": strings.TrimPrefix(kind, "min")})
	files, _, _ := unstructured.NestedSlice(u.Object, "spec", "config", "storage", "files")
	files = append(files, map[string]any{"path": fmt.Sprintf("/etc/bench-%s-%d-%s", c.run, i, kind), "contents": map[string]any{"source": "data:,x"}})
	if err := unstructured.SetNestedSlice(u.Object, files, "spec", "config", "storage", "files"); err != nil {
		c.b.Fatal(err)
	}
	var patch []byte
	switch kind {
	case "patch":
		patch = patchOf(c.b, c.ref, u)
	case "minpatch":
		full := patchOf(c.b, c.ref, u)
		patch = minimalPatch(c.b, u, full)
		c.wantConfig[u.GetName()] = full
	}
	if patch != nil {
		c.patches.set(u.GetName(), patch)
		c.patchBytes[kind] = len(patch)
	}
	return u
}

// create creates u, checks what was stored, deletes it and returns its cost.
func (c *creates) create(u *unstructured.Unstructured, kind string) cost {
	b := c.b
	self0, api0 := cpuTime(), apiCPU(b, c.pid)
	start := time.Now()
	got, err := c.res.Create(context.Background(), u, metav1.CreateOptions{})
	took := cost{wall: time.Since(start), self: cpuTime() - self0, apiserver: apiCPU(b, c.pid) - api0}
	if err != nil {
		b.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(got.Object, "spec", "config", "ignition", "version")
	if lowered := kind != "null" && kind != "none"; (v == "3.5.0") == lowered {
		b.Fatalf("created %s at %s", kind, v)
	}
	if full := c.wantConfig[u.GetName()]; full != nil {
		sameConfig(b, got, full)
	}
	if err := c.res.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	return took
}

func benchCreate(b *testing.B, cp *kubetest.ControlPlane, reg prometheus.Gatherer, patches *patchHook, mc *unstructured.Unstructured) {
	ref := admit.New(admit.Config{})
	ref.SetCeiling(admit.Ceiling{Spec: convert.V3_4})
	c := &creates{b: b, res: cp.Dynamic.Resource(admitMachineConfigs), pid: apiserverPID(b), ref: ref, patches: patches, mc: mc,
		run: strconv.FormatInt(time.Now().UnixNano(), 36), wantConfig: map[string][]byte{}, patchBytes: map[string]int{}}
	for _, k := range createKinds {
		c.create(c.object(-1, k), k) // connections up, caches warm
	}
	objs := make([][]*unstructured.Unstructured, b.N)
	for i := range objs {
		for _, k := range createKinds {
			objs[i] = append(objs[i], c.object(i, k))
		}
	}
	before := timings(b, cp, reg)
	profiled := apiserverProfile(b, cp)
	costs := map[string][]cost{}
	b.ResetTimer()
	for i := range b.N {
		for j := range createKinds {
			k := (i + j) % len(createKinds) // so that none always follows another
			costs[createKinds[k]] = append(costs[createKinds[k]], c.create(objs[i][k], createKinds[k]))
		}
	}
	b.StopTimer()
	profiled()
	reportMeans(b, before, timings(b, cp, reg))
	reportCreates(b, costs)
	for k, n := range c.patchBytes {
		b.ReportMetric(float64(n), k+"-bytes")
	}
	if patches.missed > 0 {
		b.Errorf("the patch floor had no patch for %d reviews", patches.missed)
	}
}

func apiCPU(tb testing.TB, pid int) time.Duration {
	d, err := procstat.CPU(pid)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// reportCreates reports each kind's median create, the ratios that
// matter ((c)/(b) the review's cost over the floor of a patching webhook,
// each over (a)), and mean CPU per create: this process's (the client and
// the webhooks: (c)-(b) is the review's) and the API server's.
func reportCreates(b *testing.B, costs map[string][]cost) {
	p50 := map[string]float64{}
	for k, cs := range costs {
		wall := make([]time.Duration, len(cs))
		var self, api time.Duration
		for i, c := range cs {
			wall[i], self, api = c.wall, self+c.self, api+c.apiserver
		}
		slices.Sort(wall)
		p50[k] = quantile(wall, 0.5)
		b.ReportMetric(p50[k], k+"-p50-ms")
		b.ReportMetric(float64(self)/float64(len(cs))/float64(time.Millisecond), k+"-cpu-ms")
		b.ReportMetric(float64(api)/float64(len(cs))/float64(time.Millisecond), k+"-apiserver-cpu-ms")
	}
	b.ReportMetric(p50["webhook"]/p50["patch"], "c/b")
	b.ReportMetric(p50["webhook"]/p50["none"], "c/a")
	b.ReportMetric(p50["patch"]/p50["none"], "b/a")
	b.ReportMetric(p50["null"]/p50["none"], "null/a")
}

// minimalPatch is a JSON patch taking u's spec.config to the one the full
// patch (replacing /spec/config) stores: only the values that differ
// replaced, added or removed, arrays of unequal length replaced whole.
func minimalPatch(tb testing.TB, u *unstructured.Unstructured, full []byte) []byte {
	tb.Helper()
	var ops []map[string]any
	if err := json.Unmarshal(full, &ops); err != nil || len(ops) != 1 || ops[0]["path"] != "/spec/config" {
		tb.Fatalf("not one replace of /spec/config: %.200s", full)
	}
	from, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "config")
	// Through JSON, so that numbers compare as the patch's do.
	raw, _ := json.Marshal(from)
	var fromJSON any
	_ = json.Unmarshal(raw, &fromJSON)
	out := jsonDiff(nil, "/spec/config", fromJSON, ops[0]["value"])
	b, err := json.Marshal(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// sameConfig fails unless got's spec.config is the value full's one
// operation writes.
func sameConfig(tb testing.TB, got *unstructured.Unstructured, full []byte) {
	tb.Helper()
	var ops []struct{ Value any }
	_ = json.Unmarshal(full, &ops)
	cfg, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "config")
	raw, _ := json.Marshal(cfg)
	var have any
	_ = json.Unmarshal(raw, &have)
	if len(ops) != 1 || !reflect.DeepEqual(have, ops[0].Value) {
		tb.Fatalf("%s: the minimal patch stored another config than the full one", got.GetName())
	}
}

func jsonDiff(ops []map[string]any, path string, a, b any) []map[string]any {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inB:
				ops = append(ops, map[string]any{"op": "remove", "path": p})
			case !inA:
				ops = append(ops, map[string]any{"op": "add", "path": p, "value": y})
			default:
				ops = jsonDiff(ops, p, x, y)
			}
		}
		return ops
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			ops = jsonDiff(ops, path+"/"+strconv.Itoa(i), av[i], bv[i])
		}
		return ops
	}
	if reflect.DeepEqual(a, b) {
		return ops
	}
	return append(ops, map[string]any{"op": "replace", "path": path, "value": b})
}
