package admit_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/internal/testpki"
)

var admitMachineConfigs = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}

// renderedAt35 is the rendered MachineConfig of pool in a realdata set as
// OpenShift stores it: spec 3.5.0.
func renderedAt35(tb testing.TB, set, pool string) []byte {
	tb.Helper()
	_, b := servetest.OpenShiftRendered(tb, servetest.Load(tb, shareddata.Path(tb, "realdata", set)), pool)
	return b
}

// reviewOf is an AdmissionReview of the create of the MachineConfig mc.
func reviewOf(tb testing.TB, mc []byte) []byte { return updateOf(tb, mc, nil) }

// updateOf is an AdmissionReview of the update of the stored MachineConfig
// old to mc; of mc's create when old is nil.
func updateOf(tb testing.TB, mc, old []byte) []byte {
	tb.Helper()
	op := admissionv1.Update
	if old == nil {
		op = admissionv1.Create
	}
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("5f0c7d2e-0000-4000-8000-000000000001"),
			Kind:      metav1.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"},
			Resource:  metav1.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"},
			Operation: op,
			UserInfo:  authenticationv1.UserInfo{Username: "system:serviceaccount:openshift-machine-config-operator:machine-config-controller"},
			Object:    runtime.RawExtension{Raw: mc},
			OldObject: runtime.RawExtension{Raw: old},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// quantile is the q-quantile of sorted durations, in milliseconds.
func quantile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return float64(sorted[i]) / float64(time.Millisecond)
}

// BenchmarkReview is one review of the largest rendered configs of the
// project's real data, as OpenShift's render controller sends them (spec
// 3.5.0): the request read and decoded, the config lowered and proven
// lossless, the patch written. realdata/none is platform None, the
// bare-metal installation; realdata/aws's worker is the largest by bytes.
// "new" sends a config the webhook has not seen each time (a file of its
// own added: a create); "again" the same create each time (answered from
// the lowering cache); "reapply" OpenShift's render controller at every
// pool sync: an UPDATE of the stored, lowered object with its 3.5.0 bytes
// (the cache, and the no-op comparison with what is stored).
// Reports CPU per review and the latency's median and 99th percentile.
func BenchmarkReview(b *testing.B) {
	for _, c := range []struct{ set, pool string }{{"none", "worker"}, {"aws", "worker"}, {"none", "registries"}} {
		for _, mode := range []string{"new", "again", "reapply"} {
			b.Run(c.set+"/"+c.pool+"/"+mode, func(b *testing.B) {
				var mc []byte
				if c.pool == "registries" { // a typical generated MachineConfig (2 KB)
					var err error
					if mc, err = machineConfigOf(b, "99-worker-generated-registries.yaml").MarshalJSON(); err != nil {
						b.Fatal(err)
					}
				} else {
					mc = renderedAt35(b, c.set, c.pool)
				}
				wh := admit.New(admit.Config{})
				wh.SetCeiling(admit.Ceiling{Spec: convert.V3_4})
				once := func(body []byte) {
					rec := httptest.NewRecorder()
					wh.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, admit.MutatePath, bytes.NewReader(body)))
					if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"patch"`)) {
						b.Fatalf("%d %.300s", rec.Code, rec.Body.Bytes())
					}
				}
				bodies := [][]byte{reviewOf(b, mc)}
				once(bodies[0])
				switch mode {
				case "reapply":
					bodies[0] = updateOf(b, mc, lowered(b, mc))
				case "new":
					bodies = make([][]byte, b.N)
					for i := range bodies {
						bodies[i] = reviewOf(b, withFile(b, mc, i))
					}
				}
				lat := make([]time.Duration, 0, b.N)
				b.SetBytes(int64(len(bodies[0])))
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				for i := range b.N {
					start := time.Now()
					once(bodies[i%len(bodies)])
					lat = append(lat, time.Since(start))
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/float64(time.Millisecond), "cpu-ms/op")
				slices.Sort(lat)
				b.ReportMetric(quantile(lat, 0.5), "p50-ms")
				b.ReportMetric(quantile(lat, 0.99), "p99-ms")
			})
		}
	}
}

// lowered is the MachineConfig mc as the webhook stores it.
func lowered(tb testing.TB, mc []byte) []byte {
	tb.Helper()
	var obj map[string]any
	if err := json.Unmarshal(mc, &obj); err != nil {
		tb.Fatal(err)
	}
	spec := obj["spec"].(map[string]any)
	cfg, _ := json.Marshal(spec["config"])
	res, err := admit.Lower(cfg, convert.Version{})
	if err != nil {
		tb.Fatal(err)
	}
	spec["config"] = json.RawMessage(res.Config)
	out, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// withFile is the MachineConfig mc with one more file in its config, its
// path numbered i: a config no review has seen, of the same cost.
func withFile(tb testing.TB, mc []byte, i int) []byte {
	tb.Helper()
	var obj map[string]any
	if err := json.Unmarshal(mc, &obj); err != nil {
		tb.Fatal(err)
	}
	cfg := obj["spec"].(map[string]any)["config"].(map[string]any)
	storage, _ := cfg["storage"].(map[string]any)
	if storage == nil {
		storage = map[string]any{}
		cfg["storage"] = storage
	}
	files, _ := storage["files"].([]any)
	storage["files"] = append(files, map[string]any{"path": fmt.Sprintf("/etc/mcs-bench/%d", i), "contents": map[string]any{"source": "data:,x"}})
	out, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// webhookServer serves wh over TLS on loopback with a certificate of a
// new CA, until the benchmark ends; it returns the URL of MutatePath and
// the CA.
func webhookServer(tb testing.TB, wh http.Handler) (string, []byte) {
	tb.Helper()
	ca := testpki.NewCA(tb)
	pair := ca.Serving(tb)
	dir := tb.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(cert, pair.CertPEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(key, pair.KeyPEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- admit.ServeTLS(ctx, ln, wh, admit.TLSConfig{CertFile: cert, KeyFile: key}) }()
	tb.Cleanup(func() { cancel(); <-done })
	return "https://" + ln.Addr().String() + admit.MutatePath, ca.PEM
}

// BenchmarkCreate is a MachineConfig create through a real kube-apiserver,
// alternating, in one run, a MachineConfig the webhook reviews (over TLS)
// with one it does not (objectSelector): the two medians and their ratio,
// the webhook's cost to a writer. The MachineConfigs are realdata/none's
// worker rendered config at 3.5.0 (the largest a controller writes) and
// its generated registries config (a typical one), each created under a
// new name and deleted. Its etcd does not fsync (envtest's default).
func BenchmarkCreate(b *testing.B) { benchCreates(b) }

// BenchmarkCreateFsync is BenchmarkCreate with etcd writing as deployed:
// every commit fsynced to a directory on the machine's disk, not
// envtest's --unsafe-no-fsync.
func BenchmarkCreateFsync(b *testing.B) {
	dir := b.TempDir()
	benchCreates(b, func(env *envtest.Environment) {
		etcd := &envtest.Etcd{DataDir: dir}
		etcd.Configure().Set("unsafe-no-fsync", "false")
		env.ControlPlane.Etcd = etcd
	})
}

func benchCreates(b *testing.B, opts ...func(*envtest.Environment)) {
	cp := kubetest.New(b, false, opts...)
	reg := prometheus.NewRegistry()
	wh := admit.New(admit.Config{Registry: reg})
	wh.SetCeiling(admit.Ceiling{Spec: convert.V3_4})
	url, caPEM := webhookServer(b, wh)
	nullURL, nullCA := nullWebhook(b, reg)
	patches := &patchHook{patches: map[string][]byte{}}
	patchURL, patchCA := patches.serve(b, reg)
	cfg := &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "mcs-admit-bench"},
		Webhooks: []admissionregv1.MutatingWebhook{benchHook("mcs", url, caPEM), benchHook("null", nullURL, nullCA),
			benchHook("patch", patchURL, patchCA)},
	}
	ctx := context.Background()
	if _, err := cp.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, file string }{{"rendered-worker", ""}, {"registries", "99-worker-generated-registries.yaml"}} {
		b.Run(c.name, func(b *testing.B) { benchCreate(b, cp, reg, patches, machineConfigOf(b, c.file)) })
	}
}

// timings are the sums and counts of the histograms a create's time
// splits into, by what they time: the API server's own (its whole POST,
// each webhook's call as it sees it: the review encoded, the round trip,
// the answer decoded and its patch applied) and the webhook's handler.
func timings(b *testing.B, cp *kubetest.ControlPlane, reg prometheus.Gatherer) map[string][2]float64 {
	raw, err := cp.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	ours, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range ours {
		fams[f.GetName()] = f
	}
	out := map[string][2]float64{}
	for key, sel := range map[string]struct{ family, want string }{
		"apiserver-post": {"apiserver_request_duration_seconds", "verb=POST resource=machineconfigs"},
		"mcs-call":       {"apiserver_admission_webhook_admission_duration_seconds", "name=mcs.admit.mcs.ignition-mcs.io operation=CREATE"},
		"null-call":      {"apiserver_admission_webhook_admission_duration_seconds", "name=null.admit.mcs.ignition-mcs.io operation=CREATE"},
		"mcs-handler":    {"mcs_admit_review_duration_seconds", ""},
		"null-handler":   {"null_handler_seconds", ""},
	} {
		for _, m := range fams[sel.family].GetMetric() {
			if !hasLabels(m, sel.want) {
				continue
			}
			h := m.GetHistogram()
			v := out[key]
			out[key] = [2]float64{v[0] + h.GetSampleSum(), v[1] + float64(h.GetSampleCount())}
		}
	}
	return out
}

// apiserverProfile starts a CPU profile of the API server when
// MCS_APISERVER_PROFILE names a file prefix, for MCS_APISERVER_PROFILE_SECONDS
// (default 20: make the run at least as long); the function it returns
// waits for it and writes it to PREFIX-<benchmark>.prof.
func apiserverProfile(b *testing.B, cp *kubetest.ControlPlane) func() {
	prefix := os.Getenv("MCS_APISERVER_PROFILE")
	if prefix == "" {
		return func() {}
	}
	secs := cmp.Or(os.Getenv("MCS_APISERVER_PROFILE_SECONDS"), "20")
	done := make(chan []byte, 1)
	go func() {
		p, err := cp.Kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).DoRaw(context.Background())
		if err != nil {
			b.Errorf("profiling the API server: %v", err)
		}
		done <- p
	}()
	return func() {
		name := prefix + "-" + strings.NewReplacer("/", "-").Replace(b.Name()) + ".prof"
		if err := os.WriteFile(name, <-done, 0o600); err != nil {
			b.Error(err)
		}
	}
}

// hasLabels reports whether m has every label=value of want (spaced).
func hasLabels(m *dto.Metric, want string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for _, kv := range strings.Fields(want) {
		k, v, _ := strings.Cut(kv, "=")
		if have[k] != v {
			return false
		}
	}
	return true
}

// reportMeans reports, in milliseconds, each timing's mean between two
// reads of timings.
func reportMeans(b *testing.B, before, after map[string][2]float64) {
	for key, a := range after {
		n := a[1] - before[key][1]
		if n > 0 {
			b.ReportMetric((a[0]-before[key][0])/n*1000, key+"-ms")
		}
	}
}

// machineConfigOf is realdata/none's file, or its rendered worker config
// when file is "".
// benchHook reviews MachineConfig creates labelled bench=webhook (name
// "mcs"), bench=null or bench=patch, as deploy/openshift/admit's webhook does.
func benchHook(name, url string, caPEM []byte) admissionregv1.MutatingWebhook {
	ignore, timeout, none := admissionregv1.Ignore, int32(5), admissionregv1.SideEffectClassNone
	scope := admissionregv1.ClusterScope
	label := map[string]string{"mcs": "webhook", "null": "null", "patch": "patch"}[name]
	return admissionregv1.MutatingWebhook{
		Name:                    name + ".admit.mcs.ignition-mcs.io",
		AdmissionReviewVersions: []string{"v1"},
		ClientConfig:            admissionregv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
		Rules: []admissionregv1.RuleWithOperations{{
			Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
			Rule: admissionregv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"}, APIVersions: []string{"v1"},
				Resources: []string{"machineconfigs"}, Scope: &scope},
		}},
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": label}},
		FailurePolicy:  &ignore, TimeoutSeconds: &timeout, SideEffects: &none,
	}
}

func machineConfigOf(tb testing.TB, file string) *unstructured.Unstructured {
	tb.Helper()
	var data []byte
	if file == "" {
		data = renderedAt35(tb, "none", "worker")
	} else {
		var err error
		if data, err = os.ReadFile(filepath.Join(shareddata.Path(tb, "realdata", "none"), file)); err != nil {
			tb.Fatal(err)
		}
	}
	objs := kubetest.DecodeObjects(tb, data)
	if len(objs) != 1 {
		tb.Fatalf("%d objects in %s", len(objs), file)
	}
	u := objs[0]
	u.SetOwnerReferences(nil)
	return u
}

// nullWebhook answers every review allowed, unchanged, over TLS: the
// floor any webhook costs the API server (the review's encoding, the
// round trip, the response's decoding), to set the webhook's cost against.
// Its handler's time is null_handler_seconds on reg; its requests by HTTP
// version null_requests_total{proto}.
func nullWebhook(tb testing.TB, reg prometheus.Registerer) (string, []byte) {
	tb.Helper()
	ca := testpki.NewCA(tb)
	took := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "null_handler_seconds"})
	protos := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "null_requests_total"}, []string{"proto"})
	conns := prometheus.NewCounter(prometheus.CounterOpts{Name: "null_connections_total"})
	reg.MustRegister(took, protos, conns)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() { took.Observe(time.Since(start).Seconds()) }()
		protos.WithLabelValues(r.Proto).Inc()
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&out)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Inc()
		}
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Serving(tb).TLS(tb)}, NextProtos: []string{"h2", "http/1.1"}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv.URL + "/null", ca.PEM
}
