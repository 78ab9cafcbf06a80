package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/internal/kubetest"
	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/source/kube"
)

// controllerConfig is fixtures/cluster's ControllerConfig with the status
// given (nil: completed at its generation, as the template controller
// leaves it).
func controllerConfig(t testing.TB, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	objs := kubetest.DecodeObjects(t, readFile(t, filepath.Join("..", "fixtures", "cluster", "controllerconfig.yaml")))
	cc := objs[0]
	if status == nil {
		status = completedStatus(1)
	}
	cc.Object["status"] = status
	return cc
}

func completedStatus(generation int64) map[string]any {
	return map[string]any{"observedGeneration": generation, "conditions": []any{
		map[string]any{"type": "TemplateControllerCompleted", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "", "message": ""},
		map[string]any{"type": "TemplateControllerRunning", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "", "message": ""},
		map[string]any{"type": "TemplateControllerFailing", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "", "message": ""},
	}}
}

// waits checks that the pool waits on reason, and says why: once the
// condition shows, the controller is made to sync the pool again, and that
// sync too waits, leaving the pool unwritten.
func waits(t *testing.T, cp *kubetest.ControlPlane, c *running, poolName, reason, msg string) {
	t.Helper()
	showsWaiting(t, cp, c, poolName, reason, msg)
	before, _ := c.syncs.get(poolName)
	c.guards.signal() // a change: every waiting pool is synced again
	kubetest.Eventually(t, 30*time.Second, poolName+" synced again", func() error {
		if n, err := c.syncs.get(poolName); n == before || !errors.Is(err, errPoolWaits) {
			return fmt.Errorf("%d syncs, the last %v", n-before, err)
		}
		return nil
	})
	if n := configuration(pool(t, cp, poolName)); n != "" {
		t.Fatalf("%s written while waiting on %s: %s", poolName, reason, n)
	}
}

// showsWaiting waits until the pool's RenderPending condition and its
// /status entry both say it waits on reason, the condition with msg.
func showsWaiting(t *testing.T, cp *kubetest.ControlPlane, c *running, poolName, reason, msg string) {
	t.Helper()
	kubetest.Eventually(t, 20*time.Second, poolName+" waits on "+reason, func() error {
		cond := poolCondition(pool(t, cp, poolName), conditionRenderPending)
		if cond == nil || cond["status"] != "True" || cond["reason"] != reason || !strings.Contains(fmt.Sprint(cond["message"]), msg) {
			return fmt.Errorf("RenderPending %v", cond)
		}
		if st := c.book.copy().Pools[poolName]; st == nil || !strings.Contains(st.Waiting, reason) {
			return fmt.Errorf("/status %+v", st)
		}
		return nil
	})
}

// written checks the pool is pointed at a config, its RenderPending
// condition, if it has one, False. The wait allows a loaded machine: a
// controller that does not write at all still fails it.
func written(t *testing.T, cp *kubetest.ControlPlane, poolName string) string {
	t.Helper()
	return writtenWithin(t, cp, poolName, 20*time.Second)
}

func writtenWithin(t *testing.T, cp *kubetest.ControlPlane, poolName string, within time.Duration) string {
	t.Helper()
	var name string
	kubetest.Eventually(t, within, poolName+" written once the wait ends", func() error {
		p := pool(t, cp, poolName)
		if name = configuration(p); name == "" {
			return fmt.Errorf("not pointed; RenderPending %v", poolCondition(p, conditionRenderPending))
		}
		if c := poolCondition(p, conditionRenderPending); c != nil && c["status"] != "False" {
			return fmt.Errorf("RenderPending %v", c)
		}
		return nil
	})
	return name
}

// A ControllerConfig the template controller has not completed: no pool is
// written, and each says why; completed, they are written.
func TestGuardControllerConfig(t *testing.T) {
	cp := needControlPlane(t)
	running := map[string]any{"observedGeneration": int64(1), "conditions": []any{
		map[string]any{"type": "TemplateControllerRunning", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "", "message": ""},
	}}
	cp.Apply(t, controllerConfig(t, running), poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	c := startController(t, cp, Config{})
	waits(t, cp, c, "worker", waitControllerConfig, "ControllerConfig has not completed: completed(false) running(true) failing(false)")
	cp.Apply(t, controllerConfig(t, map[string]any{"observedGeneration": int64(0)}))
	waits(t, cp, c, "worker", waitControllerConfig, "is being reported for 0, expecting it for")
	cc := controllerConfig(t, nil)
	cur, err := cp.Dynamic.Resource(kube.ControllerConfigs).Get(context.Background(), cc.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc.Object["status"] = completedStatus(cur.GetGeneration())
	cp.Apply(t, cc)
	written(t, cp, "worker")
}

// kubeletConfig selects the pools labelled pools.operator…/<pool>.
func kubeletConfig(t testing.TB, kind, name, pool string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"machineConfigPoolSelector": map[string]any{"matchLabels": map[string]any{
			"pools.operator.machineconfiguration.openshift.io/" + pool: ""}}},
	}}
	if kind == "ContainerRuntimeConfig" {
		u.Object["spec"].(map[string]any)["containerRuntimeConfig"] = map[string]any{"logLevel": "debug"}
	} else {
		u.Object["spec"].(map[string]any)["kubeletConfig"] = map[string]any{"maxPods": int64(250)}
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// A KubeletConfig or ContainerRuntimeConfig selecting the pool and not yet
// observed or not succeeded holds the pool; one selecting another pool does
// not; observed and succeeded, the pool is written.
func TestGuardSubControllers(t *testing.T) {
	for _, tc := range []struct {
		kind, reason, ok string
	}{
		{"KubeletConfig", waitKubeletConfig, "Success"},
		{"ContainerRuntimeConfig", waitContainerRuntime, "Success"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			cp := needControlPlane(t)
			cp.DeleteAll(t, kubeletConfigs, containerRuntimeConfigs)
			worker := poolObject(t, "worker")
			worker.SetLabels(map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""})
			cp.Apply(t, worker, poolObject(t, "infra"), mcObject(t, "50-worker", "worker", "one"),
				kubeletConfig(t, tc.kind, "other", "infra", nil),
				kubeletConfig(t, tc.kind, "set-worker", "worker", nil))
			c := startController(t, cp, Config{})
			waits(t, cp, c, "worker", tc.reason, "is being reported for 0, expecting it for 1")
			cp.Apply(t, kubeletConfig(t, tc.kind, "set-worker", "worker", map[string]any{"observedGeneration": int64(1), "conditions": []any{
				map[string]any{"type": "Failure", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "bad"}}}))
			waits(t, cp, c, "worker", tc.reason, "has not completed (set-worker)")
			cp.Apply(t, kubeletConfig(t, tc.kind, "set-worker", "worker", map[string]any{"observedGeneration": int64(1), "conditions": []any{
				map[string]any{"type": tc.ok, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "ok"}}}))
			written(t, cp, "worker")
		})
	}
}

// Generated MachineConfigs of two controller versions (a regeneration half
// done, OCPBUGS-3821) hold the pool until they agree.
func TestGuardControllerVersions(t *testing.T) {
	cp := needControlPlane(t)
	gen := func(name, version string) *unstructured.Unstructured {
		u := mcObject(t, name, "worker", name)
		u.SetAnnotations(map[string]string{render.AnnotationGeneratedByController: version})
		return u
	}
	cp.Apply(t, poolObject(t, "worker"), gen("00-worker", "new"), gen("01-worker-kubelet", "old"), mcObject(t, "99-user", "worker", "x"))
	c := startController(t, cp, Config{})
	waits(t, cp, c, "worker", waitControllerVersions, "new (00-worker); old (01-worker-kubelet)")
	cp.Apply(t, gen("01-worker-kubelet", "new"))
	written(t, cp, "worker")
}

// A pool selecting every MachineConfig is never written, and an Event says
// so, as upstream's SelectingAll.
func TestGuardSelectingAll(t *testing.T) {
	cp := needControlPlane(t)
	all := poolObject(t, "all")
	all.Object["spec"].(map[string]any)["machineConfigSelector"] = map[string]any{}
	cp.Apply(t, all, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	c := startController(t, cp, Config{})
	writtenWithin(t, cp, "worker", 20*time.Second)
	waits(t, cp, c, "all", waitSelectingAll, "A non-empty selector is required.")
	kubetest.Eventually(t, 30*time.Second, "the SelectingAll Event", func() error { return hasEvent(t, cp, "all", "SelectingAll") })
}

// reconcileCases: one per upstream rule, each a MachineConfig whose change
// the nodes cannot apply in place, and the field the condition names.
var reconcileCases = []struct {
	name     string
	mc       mctest.Config
	path     string
	override string
}{
	{"disks", mctest.Config{Config: map[string]any{"storage": map[string]any{"disks": []any{map[string]any{"device": "/dev/sdb", "wipeTable": true}}}}}, "$.spec.config.storage.disks", "Disks"},
	{"filesystems", mctest.Config{Config: map[string]any{"storage": map[string]any{"filesystems": []any{map[string]any{"device": "/dev/sdb1", "format": "xfs"}}}}}, "$.spec.config.storage.filesystems", "FileSystems"},
	{"raid", mctest.Config{Config: map[string]any{"storage": map[string]any{"raid": []any{map[string]any{"name": "md0", "level": "raid1", "devices": []any{"/dev/sdc", "/dev/sdd"}}}}}}, "$.spec.config.storage.raid", "Raid"},
	{"directories", mctest.Config{Config: map[string]any{"storage": map[string]any{"directories": []any{map[string]any{"path": "/etc/d", "mode": 493}}}}}, "$.spec.config.storage.directories", ""},
	{"links", mctest.Config{Config: map[string]any{"storage": map[string]any{"links": []any{map[string]any{"path": "/etc/l", "target": "/etc/hosts"}}}}}, "$.spec.config.storage.links", ""},
	{"append", mctest.Config{Config: map[string]any{"storage": map[string]any{"files": []any{map[string]any{"path": "/etc/a", "overwrite": false, "append": []any{map[string]any{"source": "data:,x"}}}}}}}, "$.spec.config.storage.files", ""},
	{"force file", mctest.Config{Files: []mctest.File{{Path: "/run/machine-config-daemon-force", Source: "data:,"}}}, "$.spec.config.storage.files", ""},
	{"kernel arguments in Ignition", mctest.Config{Version: "3.3.0", Config: map[string]any{"kernelArguments": map[string]any{"shouldExist": []any{"nosmt"}}}}, "$.spec.config.kernelArguments", ""},
	{"a user other than core", mctest.Config{Config: map[string]any{"passwd": map[string]any{"users": []any{map[string]any{"name": "alice"}}}}}, "$.spec.config.passwd.users", ""},
	{"core beyond SSH keys", mctest.Config{Config: map[string]any{"passwd": map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA"}, "shell": "/bin/zsh"}}}}}, "$.spec.config.passwd.users", ""},
	{"groups", mctest.Config{Config: map[string]any{"passwd": map[string]any{"groups": []any{map[string]any{"name": "g"}}}}}, "$.spec.config.passwd.groups", ""},
	{"fips", mctest.Config{Spec: map[string]any{"fips": true}}, "$.spec.fips", ""},
}

// An irreconcilable change, one per upstream rule: the pool keeps its
// configuration and RenderDegraded names the MachineConfig and the field;
// the storage ones are written once MachineConfiguration's
// irreconcilableValidationOverrides lifts them. A reconcilable change
// (core's SSH keys) is written.
func TestReconcilability(t *testing.T) {
	cp := needControlPlane(t)
	cp.DeleteAll(t, kube.MachineConfigurations)
	cp.Apply(t, poolObject(t, "worker"), mcObject(t, "50-worker", "worker", "one"))
	startController(t, cp, Config{})
	var base string
	kubetest.Eventually(t, 20*time.Second, "the first render", func() error {
		if base = configuration(pool(t, cp, "worker")); base == "" {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	for _, tc := range reconcileCases {
		t.Run(tc.name, func(t *testing.T) {
			tc.mc.Name, tc.mc.Role = "60-change", "worker"
			cp.Apply(t, kubetest.Object(t, tc.mc.YAML()))
			kubetest.Eventually(t, 30*time.Second, "refused", func() error {
				p := pool(t, cp, "worker")
				cond := poolCondition(p, conditionRenderDegraded)
				msg := fmt.Sprint(cond["message"])
				if cond == nil || cond["status"] != "True" || cond["reason"] != "IrreconcilableChange" ||
					!strings.Contains(msg, `base config "60-change"`) || !strings.Contains(msg, tc.path) || !strings.Contains(msg, base) {
					return fmt.Errorf("RenderDegraded %v", cond)
				}
				return nil
			})
			if n := configuration(pool(t, cp, "worker")); n != base {
				t.Fatalf("the pool moved to %s", n)
			}
			if tc.override != "" {
				setOverrides(t, cp, tc.override)
				moved := ""
				kubetest.Eventually(t, 30*time.Second, "written with the override", func() error {
					if moved = configuration(pool(t, cp, "worker")); moved == base {
						return fmt.Errorf("still %s; RenderDegraded %v", moved, poolCondition(pool(t, cp, "worker"), conditionRenderDegraded))
					}
					return nil
				})
				// Back to base: removing the section is itself a change,
				// lifted by the same override.
				deleteMC(t, cp, "60-change")
				kubetest.Eventually(t, 30*time.Second, "back to the base config", func() error {
					if n := configuration(pool(t, cp, "worker")); n != base {
						return fmt.Errorf("pool names %s", n)
					}
					return nil
				})
				setOverrides(t, cp)
				return
			}
			deleteMC(t, cp, "60-change")
			kubetest.Eventually(t, 30*time.Second, "cleared once the change is gone", func() error {
				if cond := poolCondition(pool(t, cp, "worker"), conditionRenderDegraded); cond["status"] != "False" {
					return fmt.Errorf("RenderDegraded %v", cond)
				}
				return nil
			})
		})
	}
	t.Run("core SSH keys", func(t *testing.T) {
		cp.Apply(t, kubetest.Object(t, mctest.Config{Name: "60-change", Role: "worker", Config: map[string]any{"passwd": map[string]any{
			"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA"}}}}}}.YAML()))
		kubetest.Eventually(t, 30*time.Second, "written", func() error {
			if n := configuration(pool(t, cp, "worker")); n == base {
				return fmt.Errorf("still %s; RenderDegraded %v", n, poolCondition(pool(t, cp, "worker"), conditionRenderDegraded))
			}
			return nil
		})
	})
}

// setOverrides writes MachineConfiguration/cluster's
// irreconcilableValidationOverrides.storage (none: the field removed).
func setOverrides(t *testing.T, cp *kubetest.ControlPlane, storage ...string) {
	t.Helper()
	spec := map[string]any{"managementState": "Managed"}
	if len(storage) > 0 {
		spec["irreconcilableValidationOverrides"] = map[string]any{"storage": anys(storage)}
	}
	cp.Apply(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
		"metadata": map[string]any{"name": "cluster"}, "spec": spec}})
}

func deleteMC(t *testing.T, cp *kubetest.ControlPlane, name string) {
	t.Helper()
	if err := cp.Dynamic.Resource(kube.MachineConfigs).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hasEvent is nil once an Event of the reason is recorded on the pool.
func hasEvent(t testing.TB, cp *kubetest.ControlPlane, poolName, reason string) error {
	l, err := cp.Kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	var seen []string
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == "MachineConfigPool" && e.InvolvedObject.Name == poolName {
			if e.Reason == reason {
				if e.Source.Component != eventComponent {
					return fmt.Errorf("event from %q", e.Source.Component)
				}
				return nil
			}
			seen = append(seen, e.Reason)
		}
	}
	return fmt.Errorf("no %s Event on pool %s (seen %v)", reason, poolName, seen)
}
