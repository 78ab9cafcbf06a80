package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/shareddata"
	"github.com/ignition-mcs/mcs/internal/syncbuf"
	"github.com/ignition-mcs/mcs/internal/testkit"
)

// upstreamEnv names a binary built from OpenShift's machine-config-operator
// that runs its render controller (pkg/controller/render) alone against
// --kubeconfig and prints its build's version with --version; docs/admission.md
// says what it must do. This project neither builds nor ships it.
const upstreamEnv = "MCS_MCO_RENDER"

var machineConfigPools = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}

// minApplies is how many of the render controller's re-applies the test
// waits for: each pool sync after the first GETs the rendered config, finds
// its spec.config unlike the 3.5.0 bytes it generated, and Updates it.
const minApplies = 8

// TestUpstreamRenderController runs OpenShift's own render controller
// (the binary $MCS_MCO_RENDER) against the API server, on the realdata
// worker pool's MachineConfigs. With the webhook, the rendered config it
// writes is stored at the lowest spec, read by Ignition as what it sent and
// parsed by the rollback reader; its apply loop, sync after sync, writes
// nothing (same resourceVersion, no watch event); the pool points at it.
// Without the webhook, the same controller stores 3.5.0, which the reader
// refuses.
func TestUpstreamRenderController(t *testing.T) {
	bin := os.Getenv(upstreamEnv)
	if bin == "" {
		// Not testkit.Missing: CI does not build upstream code either, so
		// the skip is the answer there too.
		t.Skipf("$%s is not set: it names a binary of OpenShift's render controller built outside this project (docs/admission.md); this project's CI does not build upstream code", upstreamEnv)
	}
	s := setup(t)
	reader := testkit.RollbackReader(t, readerVersion)
	v := upstreamVersionOf(t, bin)
	installRenderPrerequisites(t, s, v)
	kubeconfig := s.cp.Kubeconfig(t, "system:serviceaccount:openshift-machine-config-operator:machine-config-controller")

	var admitted renderedConfig
	t.Run("webhook", func(t *testing.T) {
		admitted = rehearseWithWebhook(t, s, bin, kubeconfig, reader, v)
	})
	t.Run("without webhook", func(t *testing.T) {
		s.down()
		defer s.up(t)
		got := renderWorker(t, s, bin, kubeconfig, v)
		if sv := storedVersion(got.stored); sv != "3.5.0" {
			t.Errorf("%s stored at %s without the webhook, want 3.5.0 as the controller writes it", got.name, sv)
		}
		if admitted.name != "" && (got.name != admitted.name || !bytes.Equal(configOf(got.stored), admitted.sent)) {
			t.Errorf("without the webhook the controller rendered %s, with it %s (from the lowered sources): not the same config", got.name, admitted.name)
		}
		syncs := waitSyncs(t, got.run, 3)
		if after := get(t, s.cp.Dynamic, got.name); after.GetResourceVersion() != got.stored.GetResourceVersion() {
			t.Errorf("without the webhook, %s written over %d pool syncs: resourceVersion %s → %s", got.name, syncs, got.stored.GetResourceVersion(), after.GetResourceVersion())
		}
		verdict := testkit.ReaderVerdicts(t, reader, map[string][]byte{"stored": configOf(got.stored)})["stored"]
		if !strings.Contains(verdict, "unsupported config version") {
			t.Errorf("the %s reader on %s as stored without the webhook: %q, want unsupported config version", readerVersion, got.name, verdict)
		}
		t.Logf("without the webhook: %s stored at %s, resourceVersion %s over %d pool syncs; the %s reader: %s", got.name, storedVersion(got.stored), got.stored.GetResourceVersion(), syncs, readerVersion, verdict)
	})
}

// renderedConfig is the render controller's rendered config for the worker
// pool: as stored, as it sent it (through the webhook), and its process.
type renderedConfig struct {
	name   string
	stored *unstructured.Unstructured
	sent   []byte
	run    *upstreamRun
}

// rehearseWithWebhook renders the worker pool with the webhook recording
// every review, then checks what is stored and watches the apply loop.
func rehearseWithWebhook(t *testing.T, s *webhookServer, bin, kubeconfig, reader string, v upstreamVersion) renderedConfig {
	w := admit.New(admit.Config{Logger: kubetest.Logger(t)})
	s.use(w) // made ready
	rec := &reviewRecorder{next: w}
	s.use(rec)
	got := renderWorker(t, s, bin, kubeconfig, v)
	created := rec.of(got.name, admissionv1.Create)
	if len(created) != 1 {
		t.Fatalf("%d CREATE reviews of %s, want 1", len(created), got.name)
	}
	got.sent = created[0]
	checkStoredLowest(t, got, reader)
	checkApplyLoopNoOp(t, s, rec, got)
	t.Run("removed", func(t *testing.T) { checkWebhookRemoved(t, s, bin, kubeconfig, got) })
	return got
}

// checkWebhookRemoved is what docs/admission.md says of removing the
// webhook and of an outage: the controller, running again without it,
// writes its 3.5.0 bytes back at its next sync under the same name (the
// pool keeps pointing at it: no rollout). With the webhook back, its next
// re-apply (it compares its own encoding with the API server's, which never
// match byte for byte, so it sends one every sync) is stored lowered again,
// and from then on nothing is written.
func checkWebhookRemoved(t *testing.T, s *webhookServer, bin, kubeconfig string, got renderedConfig) {
	lowest := storedVersion(got.stored)
	s.down()
	run := startUpstream(t, bin, kubeconfig)
	back := waitStoredAt(t, s, run, got.name, "3.5.0")
	if !bytes.Equal(configOf(back), got.sent) {
		t.Errorf("%s written back otherwise than the controller first sent it", got.name)
	}
	s.up(t)
	healed := waitStoredAt(t, s, run, got.name, lowest)
	syncs := waitSyncs(t, run, 3)
	after := get(t, s.cp.Dynamic, got.name)
	if after.GetResourceVersion() != healed.GetResourceVersion() {
		t.Errorf("%s lowered again at resourceVersion %s, then written at %s", got.name, healed.GetResourceVersion(), after.GetResourceVersion())
	}
	if name := poolTarget(t, s); name != got.name {
		t.Errorf("the worker pool points at %q, want %s still", name, got.name)
	}
	t.Logf("webhook removed: %s written back at 3.5.0 (resourceVersion %s → %s), the pool still on it; webhook back: stored at %s again (→ %s), then %d pool syncs wrote nothing (%s)",
		got.name, got.stored.GetResourceVersion(), back.GetResourceVersion(), lowest, healed.GetResourceVersion(), syncs, after.GetResourceVersion())
}

// waitSyncs waits for n more pool syncs, then stops the controller, and
// returns how many it finished.
func waitSyncs(t *testing.T, run *upstreamRun, n int) int {
	t.Helper()
	syncs0 := run.syncs()
	kubetest.Eventually(t, 3*time.Minute, fmt.Sprintf("%d more pool syncs", n), func() error {
		run.alive(t)
		if got := run.syncs() - syncs0; got < n {
			return run.waiting("%d pool syncs", got)
		}
		return nil
	})
	run.stop(t)
	return run.syncs() - syncs0
}

// waitStoredAt waits until the controller has stored name at spec version v.
func waitStoredAt(t *testing.T, s *webhookServer, run *upstreamRun, name, v string) *unstructured.Unstructured {
	t.Helper()
	var o *unstructured.Unstructured
	kubetest.Eventually(t, 3*time.Minute, name+" stored at "+v, func() error {
		run.alive(t)
		if o = get(t, s.cp.Dynamic, name); storedVersion(o) != v {
			return run.waiting("stored at %s", storedVersion(o))
		}
		return nil
	})
	return o
}

// checkStoredLowest: the rendered config OpenShift sent at 3.5.0 is stored
// at the lowest spec, read by Ignition as sent, and parsed by the rollback
// reader, which refuses what was sent.
func checkStoredLowest(t *testing.T, got renderedConfig, reader string) {
	t.Helper()
	stored := configOf(got.stored)
	want, err := admit.Lower(got.sent, convert.Version{})
	if err != nil {
		t.Fatalf("lowering what the controller sent: %v", err)
	}
	if want.Declared != convert.V3_5 {
		t.Errorf("the controller sent %s, want 3.5.0", want.Declared)
	}
	if v := storedVersion(got.stored); v != want.Stored.String() || v == "3.5.0" {
		t.Errorf("%s stored at %s, want %s", got.name, v, want.Stored)
	}
	if !bytes.Equal(ignitionCanonical(t, got.sent), ignitionCanonical(t, stored)) {
		t.Errorf("%s: Ignition reads the stored config otherwise than the one the controller sent", got.name)
	}
	verdicts := testkit.ReaderVerdicts(t, reader, map[string][]byte{"stored": stored, "sent": got.sent})
	if verdicts["stored"] != "" {
		t.Errorf("the %s reader refuses %s as stored: %s", readerVersion, got.name, verdicts["stored"])
	}
	if !strings.Contains(verdicts["sent"], "unsupported config version") {
		t.Errorf("the %s reader on %s as sent: %q, want unsupported config version", readerVersion, got.name, verdicts["sent"])
	}
	t.Logf("%s: sent at %s (%d bytes), stored at %s (%d bytes); the %s reader parses the stored one and refuses the sent one",
		got.name, want.Declared, len(got.sent), storedVersion(got.stored), len(stored), readerVersion)
}

// checkApplyLoopNoOp watches the rendered config while the controller
// re-applies it at least minApplies times: every re-apply reaches the
// webhook as an Update, and none is written.
func checkApplyLoopNoOp(t *testing.T, s *webhookServer, rec *reviewRecorder, got renderedConfig) {
	t.Helper()
	ctx := context.Background()
	res := s.cp.Dynamic.Resource(machineConfigs)
	rv := got.stored.GetResourceVersion()
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, FieldSelector: "metadata.name=" + got.name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pool0 := poolObject(t, s)
	start, syncs0, applies0 := time.Now(), got.run.syncs(), len(rec.of(got.name, admissionv1.Update))
	kubetest.Eventually(t, 3*time.Minute, fmt.Sprintf("%d re-applies of %s", minApplies, got.name), func() error {
		got.run.alive(t)
		n, syncs := len(rec.of(got.name, admissionv1.Update))-applies0, got.run.syncs()-syncs0
		if n < minApplies || syncs < minApplies {
			return got.run.waiting("%d re-applies and %d pool syncs so far", n, syncs)
		}
		return nil
	})
	got.run.stop(t)
	updates := rec.of(got.name, admissionv1.Update)
	applies, syncs := len(updates)-applies0, got.run.syncs()-syncs0
	for i, sent := range updates {
		if !bytes.Equal(sent, got.sent) {
			t.Errorf("re-apply %d sent other bytes than the create: not the apply loop", i)
		}
	}
	after := get(t, s.cp.Dynamic, got.name)
	if after.GetResourceVersion() != rv {
		t.Errorf("%s: resourceVersion %s → %s over %d re-applies: the apply loop wrote", got.name, rv, after.GetResourceVersion(), applies)
	}
	firstEventIsSentinel(t, res, w, got.name, applies)
	pool1 := poolObject(t, s)
	if name := poolTarget(t, s); name != got.name {
		t.Errorf("the worker pool points at %q, want %s", name, got.name)
	}
	t.Logf("%s over %s: %d pool syncs, %d re-applies (Updates reviewed by the webhook), resourceVersion %s before and %s after, stored at %s; the pool's resourceVersion %s → %s, its conditions [%s] → [%s]",
		got.name, time.Since(start).Round(time.Second), syncs, applies, rv, after.GetResourceVersion(), storedVersion(after), pool0.GetResourceVersion(), pool1.GetResourceVersion(), conditions(pool0), conditions(pool1))
}

// renderWorker creates the realdata worker pool and its MachineConfigs,
// runs the render controller until the pool points at its rendered config,
// and returns that config as stored. The objects are deleted at the end.
func renderWorker(t *testing.T, s *webhookServer, bin, kubeconfig string, v upstreamVersion) renderedConfig {
	t.Helper()
	t.Cleanup(func() { s.cp.DeleteAll(t, machineConfigs, machineConfigPools) })
	s.cp.Apply(t, workerSources(t, v)...)
	run := startUpstream(t, bin, kubeconfig)
	var name string
	kubetest.Eventually(t, 3*time.Minute, "the worker pool pointing at a rendered config", func() error {
		run.alive(t)
		if name = poolTarget(t, s); name == "" {
			return run.waiting("not yet")
		}
		return nil
	})
	return renderedConfig{name: name, stored: get(t, s.cp.Dynamic, name), run: run}
}

// poolObject is the worker pool as stored.
func poolObject(t *testing.T, s *webhookServer) *unstructured.Unstructured {
	t.Helper()
	pool, err := s.cp.Dynamic.Resource(machineConfigPools).Get(context.Background(), "worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// conditions are an object's status.conditions as type=status.
func conditions(o *unstructured.Unstructured) string {
	list, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	var out []string
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, fmt.Sprintf("%v=%v", m["type"], m["status"]))
		}
	}
	return strings.Join(out, " ")
}

// poolTarget is the rendered config the worker pool points at.
func poolTarget(t *testing.T, s *webhookServer) string {
	t.Helper()
	name, _, _ := unstructured.NestedString(poolObject(t, s).Object, "spec", "configuration", "name")
	return name
}

// workerSources are the realdata "none" worker pool and its MachineConfigs
// (rendered ones left out: the controller renders), their
// generated-by-controller-version set to the binary's, as its own
// sub-controllers would have written them.
func workerSources(t *testing.T, v upstreamVersion) []*unstructured.Unstructured {
	t.Helper()
	const generatedBy = "machineconfiguration.openshift.io/generated-by-controller-version"
	var out []*unstructured.Unstructured
	for _, o := range realdataObjects(t, "none") {
		if o.GetLabels()["machineconfiguration.openshift.io/role"] != "worker" || strings.HasPrefix(o.GetName(), "rendered-") {
			continue
		}
		if a := o.GetAnnotations(); a[generatedBy] != "" {
			a[generatedBy] = v.Hash
			o.SetAnnotations(a)
		}
		out = append(out, o)
	}
	data, err := os.ReadFile(filepath.Join(shareddata.Path(t, "realdata", "none"), "worker.machineconfigpool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, kubetest.DecodeObjects(t, data)...)
}

// upstreamVersion is what the binary's build says it is: the controller
// renders only from a ControllerConfig generated by the same version, and
// only over MachineConfigs its own version generated.
type upstreamVersion struct{ Raw, Hash string }

func upstreamVersionOf(t *testing.T, bin string) upstreamVersion {
	t.Helper()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	var v upstreamVersion
	if err := json.Unmarshal(out, &v); err != nil || v.Raw == "" || v.Hash == "" {
		t.Fatalf("%s --version printed %q, want {\"raw\":…,\"hash\":…}: %v", bin, out, err)
	}
	return v
}

// installRenderPrerequisites provides what the render controller waits for
// and what, in a cluster, other parts of OpenShift write: the CRDs it
// reads; the realdata ControllerConfig, stamped as generated by the
// binary's version, with the status the template controller would set
// (completed); the OSImageStream the operator would publish (the
// OSStreams gate is on by default), from the ControllerConfig's images;
// and the operator's MachineConfiguration "cluster" (read under the
// IrreconcilableMachineConfig gate, on by default).
func installRenderPrerequisites(t *testing.T, s *webhookServer, v upstreamVersion) {
	t.Helper()
	all, err := kubetest.CRDFiles(true)
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for _, f := range all {
		for _, kind := range []string{"controllerconfigs", "kubeletconfigs", "containerruntimeconfigs", "osimagestreams", "machineconfigurations"} {
			if strings.Contains(filepath.Base(f), "_"+kind) {
				crds = append(crds, f)
			}
		}
	}
	if _, err := envtest.InstallCRDs(s.cp.Admin, envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(shareddata.Path(t, "realdata", "none"), "controllerconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cc := kubetest.DecodeObjects(t, data)[0]
	ann := cc.GetAnnotations()
	ann["machineconfiguration.openshift.io/generated-by-version"] = v.Raw
	cc.SetAnnotations(ann)
	now := time.Now().UTC().Format(time.RFC3339)
	cc.Object["status"] = map[string]any{"observedGeneration": int64(1), "conditions": []any{
		map[string]any{"type": "TemplateControllerCompleted", "status": "True", "lastTransitionTime": now, "reason": "", "message": ""},
		map[string]any{"type": "TemplateControllerRunning", "status": "False", "lastTransitionTime": now, "reason": "", "message": ""},
		map[string]any{"type": "TemplateControllerFailing", "status": "False", "lastTransitionTime": now, "reason": "", "message": ""},
	}}
	image, _, _ := unstructured.NestedString(cc.Object, "spec", "baseOSContainerImage")
	ext, _, _ := unstructured.NestedString(cc.Object, "spec", "baseOSExtensionsContainerImage")
	stream := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "OSImageStream",
		"metadata": map[string]any{"name": "cluster", "annotations": map[string]any{"machineconfiguration.openshift.io/release-image-version": v.Hash}},
		"spec":     map[string]any{"defaultStream": "rhel-9"},
		"status": map[string]any{"defaultStream": "rhel-9", "availableStreams": []any{
			map[string]any{"name": "rhel-9", "osImage": image, "osExtensionsImage": ext},
		}},
	}}
	knobs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
		"metadata": map[string]any{"name": "cluster"},
		"spec":     map[string]any{"managementState": "Managed"},
	}}
	s.cp.Apply(t, cc, stream, knobs)
}

// upstreamRun is the binary running, its log kept.
type upstreamRun struct {
	cmd    *exec.Cmd
	log    *syncbuf.Buffer
	exited chan struct{}
	once   sync.Once
}

// startUpstream starts the render controller against kubeconfig with a 2 s
// informer resync (so pool syncs repeat) and its sync log on (-v=4); the
// test's end stops it.
func startUpstream(t *testing.T, bin, kubeconfig string) *upstreamRun {
	t.Helper()
	r := &upstreamRun{log: &syncbuf.Buffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(bin, "--kubeconfig", kubeconfig, "--resync", "2s", "-v=4", "--logtostderr")
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the process: SIGTERM, then SIGKILL if it has not exited
// within 10 s.
func (r *upstreamRun) stop(t *testing.T) {
	r.once.Do(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			t.Logf("%s did not exit on SIGTERM within 10s: killed", r.cmd.Path)
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	})
}

// syncs counts the worker pool syncs the controller has finished.
func (r *upstreamRun) syncs() int {
	return strings.Count(r.log.String(), `Finished syncing machineconfigpool "worker"`)
}

// alive ends the test, with the log's end, if the process has exited.
func (r *upstreamRun) alive(t *testing.T) {
	t.Helper()
	select {
	case <-r.exited:
		t.Fatalf("%s exited: %v; its log ends:\n%s", r.cmd.Path, r.cmd.ProcessState, r.tail())
	default:
	}
}

// waiting is an error for kubetest.Eventually that adds the log's end
// when it is printed, not at every poll.
func (r *upstreamRun) waiting(format string, args ...any) error {
	return logTailError{msg: fmt.Sprintf(format, args...), run: r}
}

type logTailError struct {
	msg string
	run *upstreamRun
}

func (e logTailError) Error() string {
	return e.msg + "; the controller's log ends:\n" + e.run.tail()
}

// tail is the last lines of the log, for a failure message.
func (r *upstreamRun) tail() string {
	lines := strings.Split(strings.TrimRight(r.log.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// reviewRecorder passes each AdmissionReview to next after recording, per
// MachineConfig and operation, the spec.config it was sent.
type reviewRecorder struct {
	next http.Handler
	mu   sync.Mutex
	seen map[string][][]byte // "name/OPERATION" → configs
}

func (r *reviewRecorder) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err == nil {
		var review admissionv1.AdmissionReview
		var o unstructured.Unstructured
		if json.Unmarshal(body, &review) == nil && review.Request != nil && o.UnmarshalJSON(review.Request.Object.Raw) == nil {
			r.mu.Lock()
			if r.seen == nil {
				r.seen = map[string][][]byte{}
			}
			key := o.GetName() + "/" + string(review.Request.Operation)
			r.seen[key] = append(r.seen[key], configOf(&o))
			r.mu.Unlock()
		}
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.next.ServeHTTP(rw, req)
}

// of is the configs sent for name in reviews of op, oldest first.
func (r *reviewRecorder) of(name string, op admissionv1.Operation) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.seen[name+"/"+string(op)]...)
}
