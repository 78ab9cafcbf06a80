package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

// The rules of upstream's pkg/controller/common/reconcile.go
// (isConfigReconcilable): what the machine-config-daemon cannot change on a
// running node. Each rule reads one section of the Ignition config as a list
// of entries; a section whose entries differ between the pool's current
// rendered config and the new one is refused, unless the cluster's
// MachineConfiguration lifts it (irreconcilableValidationOverrides.storage).
type reconcileRule struct {
	section  string // upstream's word in "ignition <section> section contains changes"
	path     string // where it sits in a MachineConfig
	override string // the irreconcilableValidationOverrides.storage value lifting it, if any
	entries  func(*convert.Config) []any
	// refuse, when set, replaces "the entries differ": it is given the
	// entries new has that current has not, and returns what is refused.
	refuse func(added []any) string
}

var reconcileRules = []reconcileRule{
	{section: "Passwd Groups", path: "$.spec.config.passwd.groups", entries: func(c *convert.Config) []any { return anys(c.Passwd.Groups) }},
	{section: "passwd users", path: "$.spec.config.passwd.users", entries: func(c *convert.Config) []any { return anys(c.Passwd.Users) }, refuse: refuseUsers},
	{section: "kargs", path: "$.spec.config.kernelArguments", entries: func(c *convert.Config) []any {
		return append(anys(c.KernelArguments.ShouldExist), prefixed("shouldNotExist ", c.KernelArguments.ShouldNotExist)...)
	}},
	{section: "disks", path: "$.spec.config.storage.disks", override: "Disks", entries: func(c *convert.Config) []any { return anys(c.Storage.Disks) }},
	{section: "filesystems", path: "$.spec.config.storage.filesystems", override: "FileSystems", entries: func(c *convert.Config) []any { return anys(c.Storage.Filesystems) }},
	{section: "raid", path: "$.spec.config.storage.raid", override: "Raid", entries: func(c *convert.Config) []any { return anys(c.Storage.Raid) }},
	{section: "directories", path: "$.spec.config.storage.directories", entries: func(c *convert.Config) []any { return anys(c.Storage.Directories) }},
	// Links may be removed (upstream allows an old config to drop them on
	// upgrade), not added or changed.
	{section: "links", path: "$.spec.config.storage.links", entries: func(c *convert.Config) []any { return anys(c.Storage.Links) },
		refuse: func(added []any) string {
			if len(added) == 0 {
				return ""
			}
			return "ignition links section contains changes"
		}},
	// A file appended to cannot be re-applied idempotently. Upstream refuses
	// every config holding one, even unchanged, so a pool that ever had one
	// could never change again; mcs refuses one added or changed. Only such
	// files can be refused, so the others are left out before any is
	// encoded to be compared: a worker's are a few hundred kilobytes.
	{section: "files", path: "$.spec.config.storage.files", entries: func(c *convert.Config) []any {
		return anys(slices.DeleteFunc(slices.Clone(c.Storage.Files), func(f fileEntry) bool {
			return len(f.Append) == 0 && f.Path != machineConfigDaemonForceFile
		}))
	},
		refuse: func(added []any) string {
			for _, e := range added {
				f := e.(fileEntry)
				if len(f.Append) > 0 {
					return fmt.Sprintf("ignition file %s includes append", f.Path)
				}
				if f.Path == machineConfigDaemonForceFile {
					return fmt.Sprintf("cannot create %s via Ignition", f.Path)
				}
			}
			return ""
		}},
}

// machineConfigDaemonForceFile makes the daemon skip its checks; upstream
// refuses it in a MachineConfig.
const machineConfigDaemonForceFile = "/run/machine-config-daemon-force"

// coreUser is the one user whose SSH keys and password may change in place.
const coreUser = "core"

type fileEntry = types.File

func refuseUsers(added []any) string {
	for _, e := range added {
		u := e.(userEntry)
		if u.Name != coreUser {
			return "invalid passwd change(s): ignition passwd user section contains unsupported changes: non-core user"
		}
		rest := u
		rest.Name, rest.SSHAuthorizedKeys, rest.PasswordHash = "", nil, nil
		if !sameJSON(rest, userEntry{}) {
			return "invalid passwd change(s): SSH keys and password hash are not reconcilable"
		}
	}
	return ""
}

type userEntry = types.PasswdUser

func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func prefixed[T any](p string, s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		js, _ := json.Marshal(v)
		out[i] = p + string(js)
	}
	return out
}

// entryKeys are the JSON encodings of entries: equal entries (nil and empty
// lists alike, as Ignition omits both) have equal keys.
func entryKeys(entries []any) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		js, _ := json.Marshal(e)
		out[i] = string(js)
	}
	return out
}

// added are the entries of next that cur lacks.
func added(cur, next []any) []any {
	have := entryKeys(cur)
	var out []any
	for i, k := range entryKeys(next) {
		if !slices.Contains(have, k) {
			out = append(out, next[i])
		}
	}
	return out
}

// irreconcilable is a change the nodes of a pool cannot apply in place.
type irreconcilable struct {
	Current string   // the pool's current rendered config
	By      []string // the pool's MachineConfigs that bring the change (none: something was removed)
	Reason  string   // upstream's words
	Path    string   // the field
}

func (e *irreconcilable) Error() string {
	if len(e.By) == 0 {
		return fmt.Sprintf("reconciliation failed between current config %q and the pool's MachineConfigs: %s (%s: removed)", e.Current, e.Reason, e.Path)
	}
	return fmt.Sprintf("reconciliation failed between current config %q and base config %q: %s (%s)", e.Current, strings.Join(e.By, `", "`), e.Reason, e.Path)
}

// reconcileInput is what a check compares: the current config and FIPS, the
// new ones, and the pool's MachineConfigs to blame (parsed only on a refusal).
type reconcileInput struct {
	current           string
	cur, next         *convert.Config
	curFIPS, nextFIPS bool
	components        func() []component
	overrides         []string
}

type component struct {
	name string
	cfg  *convert.Config
	fips bool
}

// checkReconcilable returns the first rule the change breaks, naming the
// MachineConfigs that bring it, or nil.
func checkReconcilable(in reconcileInput) *irreconcilable {
	if in.curFIPS != in.nextFIPS {
		e := &irreconcilable{Current: in.current, Reason: "detected change to FIPS flag; refusing to modify FIPS on a running cluster", Path: "$.spec.fips"}
		for _, c := range in.components() {
			if c.fips && in.nextFIPS {
				e.By = append(e.By, c.name)
			}
		}
		return e
	}
	for _, r := range reconcileRules {
		if r.override != "" && slices.Contains(in.overrides, r.override) {
			continue
		}
		cur, next := r.entries(in.cur), r.entries(in.next)
		var reason string
		if r.refuse != nil {
			reason = r.refuse(added(cur, next))
		} else if !slices.Equal(entryKeys(cur), entryKeys(next)) {
			reason = "ignition " + r.section + " section contains changes"
		}
		if reason == "" {
			continue
		}
		e := &irreconcilable{Current: in.current, Reason: reason, Path: r.path}
		for _, c := range in.components() {
			brings := added(cur, r.entries(c.cfg))
			if (r.refuse == nil && len(brings) > 0) || (r.refuse != nil && r.refuse(brings) != "") {
				e.By = append(e.By, c.name)
			}
		}
		return e
	}
	return nil
}

// overridesOf reads irreconcilableValidationOverrides.storage.
func overridesOf(mcfg *unstructured.Unstructured) []string {
	if mcfg == nil {
		return nil
	}
	s, _, _ := unstructured.NestedStringSlice(mcfg.Object, "spec", "irreconcilableValidationOverrides", "storage")
	return s
}

// reconcileCache keeps each pool's current config, parsed: the render the
// controller pointed the pool at (no parse), or the stored config parsed
// once per name and resourceVersion. One entry per pool.
type reconcileCache struct {
	mu     sync.Mutex
	byPool map[string]parsedConfig
	// fetch reads a MachineConfig whole from the API server: the cache
	// keeps no rendered config's spec.
	fetch func(ctx context.Context, name string) (*unstructured.Unstructured, error)
}

type parsedConfig struct {
	name, rv string
	cfg      *convert.Config
	fips     bool
	err      error
}

// parse reads a pool's current MachineConfig's Ignition config and FIPS
// flag, upgraded to the newest spec as renders hold it.
func (rc *reconcileCache) parse(ctx context.Context, pool string, u *unstructured.Unstructured) (parsedConfig, error) {
	rc.mu.Lock()
	p, ok := rc.byPool[pool]
	rc.mu.Unlock()
	if ok && p.name == u.GetName() && p.rv == u.GetResourceVersion() {
		return p, nil
	}
	if _, whole := u.Object["spec"]; !whole && rc.fetch != nil {
		name := u.GetName()
		var err error
		if u, err = rc.fetch(ctx, name); err != nil {
			return parsedConfig{}, fmt.Errorf("reading MachineConfig %s: %w", name, err)
		}
	}
	p = parseMachineConfig(u)
	rc.store(pool, p)
	return p, nil
}

// rendered records the render a pool was pointed at, stored at rv: the
// config the written one was encoded from, so the next check need not
// parse it back.
func (rc *reconcileCache) rendered(pool string, res *render.Result, rv string) {
	rc.store(pool, parsedConfig{name: res.Name, rv: rv, cfg: &res.Config, fips: res.MachineConfig.Spec.FIPS})
}

func (rc *reconcileCache) store(pool string, p parsedConfig) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.byPool == nil {
		rc.byPool = map[string]parsedConfig{}
	}
	rc.byPool[pool] = p
}

// keep forgets the pools not in present.
func (rc *reconcileCache) keep(present map[string]string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for pool := range rc.byPool {
		if _, ok := present[pool]; !ok {
			delete(rc.byPool, pool)
		}
	}
}

func parseMachineConfig(u *unstructured.Unstructured) parsedConfig {
	p := parsedConfig{name: u.GetName(), rv: u.GetResourceVersion(), cfg: &convert.Config{}}
	p.fips, _, _ = unstructured.NestedBool(u.Object, "spec", "fips")
	raw, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "config")
	if !ok || raw == nil {
		return p
	}
	js, err := json.Marshal(raw)
	if err != nil {
		p.err = err
		return p
	}
	if string(js) == "{}" || string(js) == "null" {
		return p
	}
	parsed, err := convert.Parse(js)
	if err != nil {
		p.err = err
		return p
	}
	p.cfg = &parsed.Config
	return p
}

// reconcilable checks the pool's render against the rendered config it
// names now; nil when it has none (or it is gone), as upstream.
//
// The error is the API server's, reading a current config whose spec the
// cache does not keep (see kube.Source.MachineConfig): the pool is retried.
func (g *gate) reconcilable(ctx context.Context, p *unstructured.Unstructured, res *render.Result) (*irreconcilable, error) {
	current := configuration(p)
	if current == "" || current == res.Name {
		return nil, nil
	}
	cu := g.src.MachineConfig(current)
	if cu == nil {
		return nil, nil
	}
	cur, err := g.reconc.parse(ctx, p.GetName(), cu)
	if err != nil {
		return nil, err
	}
	if cur.err != nil {
		g.log.Warn("cannot read the pool's current config; not checking reconcilability", "pool", p.GetName(), "config", current, "err", cur.err)
		return nil, nil
	}
	return checkReconcilable(reconcileInput{
		current: current, cur: cur.cfg, next: &res.Config, curFIPS: cur.fips, nextFIPS: res.MachineConfig.Spec.FIPS,
		overrides: overridesOf(g.caches.machineConfiguration()),
		components: func() []component {
			var out []component
			for _, name := range res.MachineConfigs {
				if u := g.src.MachineConfig(name); u != nil {
					pc := parseMachineConfig(u)
					out = append(out, component{name: name, cfg: pc.cfg, fips: pc.fips})
				}
			}
			return out
		},
	}), nil
}
