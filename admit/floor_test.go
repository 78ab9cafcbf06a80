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

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/procstat"
	"github.com/ignition-mcs/mcs/internal/testpki"
)

// patchHook is the floor of a webhook that patches: it reads and decodes
// the review as the null webhook does, then answers the patch mcs admit
// answered for the object of that name (or, for "fullpatch", the whole
// config it stores), computed before the create, with no review at all. (c)/(b), mcs admit against it, is what the review
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
// admit reviews it, (b) the patch floor answers the patch mcs admit
// answers (only what the review changed: the version, a few dozen bytes),
// "fullpatch" the patch floor answers a replace of spec.config whole with
// the config that patch stores (mcs admit's answer before it answered the
// minimal one: what the patch's shape costs the API server), the null
// webhook answers "allowed", (a) no webhook sees it.
var createKinds = []string{"webhook", "patch", "fullpatch", "null", "none"}

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
	wantConfig map[string]any // the config the patch floor's object must store
	patchBytes map[string]int // the last patch's size, by kind
}

// object is iteration i's MachineConfig of kind: new content (a file
// named by the iteration), as a new rendered config is; the patch floor's
// patch for it is made here, before it is created.
func (c *creates) object(i int, kind string) *unstructured.Unstructured {
	u := c.mc.DeepCopy()
	u.SetName(fmt.Sprintf("bench-%s-%d-%s", c.run, i, kind))
	u.SetLabels(map[string]string{"bench": strings.TrimPrefix(kind, "full")})
	files, _, _ := unstructured.NestedSlice(u.Object, "spec", "config", "storage", "files")
	files = append(files, map[string]any{"path": fmt.Sprintf("/etc/bench-%s-%d-%s", c.run, i, kind), "contents": map[string]any{"source": "data:,x"}})
	if err := unstructured.SetNestedSlice(u.Object, files, "spec", "config", "storage", "files"); err != nil {
		c.b.Fatal(err)
	}
	var patch []byte
	switch kind {
	case "patch", "fullpatch":
		patch = patchOf(c.b, c.ref, u)
		config := patchedConfig(c.b, u, patch)
		if kind == "fullpatch" {
			patch = fullPatch(c.b, patch, config)
		}
		c.wantConfig[u.GetName()] = config
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
	if want := c.wantConfig[u.GetName()]; want != nil {
		sameConfig(b, got, want)
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
		run: strconv.FormatInt(time.Now().UnixNano(), 36), wantConfig: map[string]any{}, patchBytes: map[string]int{}}
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
// matter ((c)/(b) the review's cost over the floor of a webhook answering
// the same patch; (c)/fullpatch over one answering the whole config, as
// mcs admit did; each over (a)), and mean CPU per create: this process's
// (the client and the webhooks: (c)-(b) is the review's) and the API
// server's.
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
	b.ReportMetric(p50["webhook"]/p50["fullpatch"], "c/fullpatch")
	b.ReportMetric(p50["webhook"]/p50["none"], "c/a")
	b.ReportMetric(p50["patch"]/p50["none"], "b/a")
	b.ReportMetric(p50["fullpatch"]/p50["none"], "fullpatch/a")
	b.ReportMetric(p50["null"]/p50["none"], "null/a")
}

// patchedConfig is the spec.config patch stores for u, applied by the API
// server's own JSON patch.
func patchedConfig(tb testing.TB, u *unstructured.Unstructured, patch []byte) any {
	tb.Helper()
	raw, err := u.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		tb.Fatalf("applying %.300s: %v", patch, err)
	}
	var o struct{ Spec struct{ Config any } }
	if err := json.Unmarshal(out, &o); err != nil || o.Spec.Config == nil {
		tb.Fatalf("no spec.config patched (%v)", err)
	}
	return o.Spec.Config
}

// fullPatch is patch with its operations on spec.config replaced by one
// replace of spec.config whole with config (what patch stores).
func fullPatch(tb testing.TB, patch []byte, config any) []byte {
	tb.Helper()
	var ops []map[string]any
	if err := json.Unmarshal(patch, &ops); err != nil {
		tb.Fatal(err)
	}
	out := []map[string]any{{"op": "replace", "path": "/spec/config", "value": config}}
	for _, op := range ops {
		if p, _ := op["path"].(string); p != "/spec/config" && !strings.HasPrefix(p, "/spec/config/") {
			out = append(out, op)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// sameConfig fails unless got's spec.config is the value want.
func sameConfig(tb testing.TB, got *unstructured.Unstructured, want any) {
	tb.Helper()
	cfg, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "config")
	raw, _ := json.Marshal(cfg)
	var have any
	_ = json.Unmarshal(raw, &have)
	if !reflect.DeepEqual(have, want) {
		tb.Fatalf("%s: stored another config than the patch floor's patch stores", got.GetName())
	}
}
