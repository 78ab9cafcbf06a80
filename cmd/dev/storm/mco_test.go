package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the storm command for TestMCOStorm's
// run, which starts itself again (storm netns, storm bare).
func TestMain(m *testing.M) {
	if os.Getenv("STORM_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestMCOFlags(t *testing.T) {
	for _, c := range []struct {
		name     string
		args     []string
		src, bin string
		err      string
	}{
		{"none", nil, "", "", ""},
		{"source", []string{"-mco-src", "/src/mco"}, "/src/mco", "", ""},
		{"binary", []string{"-mco-bin", "/bin/mcs-server"}, "", "/bin/mcs-server", ""},
		{"both", []string{"-mco-src", "a", "-mco-bin", "b"}, "", "", "give one"},
		{"stray argument", []string{"-mco-src", "a", "b"}, "", "", "unexpected arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := parseFlags(c.args)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.mcoSrc != c.src || o.mcoBin != c.bin || o.mco() != (c.src+c.bin != "") {
				t.Fatalf("src %q bin %q mco %v", o.mcoSrc, o.mcoBin, o.mco())
			}
		})
	}
}

// Without OpenShift's server the run says how to add it; given one, it is
// started only in a private network namespace.
func TestMCOSkipped(t *testing.T) {
	f, err := newFixture(t.TempDir(), options{pool: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    options
		want string
	}{
		{"not given", options{}, "mco: skipped: no OpenShift machine-config-server given: -mco-src DIR (a git clone of " + mcoRepo},
		{"outside a namespace", options{mcoBin: "/nonexistent/machine-config-server"}, "mco: skipped: not in a private network namespace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if tgt := addMCO(context.Background(), c.o, f, &target{name: "mcs"}, &out); tgt != nil {
				t.Fatalf("started %+v", tgt)
			}
			if !strings.HasPrefix(out.String(), c.want) {
				t.Fatalf("said %q, want %q…", out.String(), c.want)
			}
		})
	}
}

// A source tree that does not build leaves OpenShift's server out, before
// any namespace is made: the storm goes on without it.
func TestMCOBuildFails(t *testing.T) {
	src := t.TempDir()
	var out bytes.Buffer
	err := reexecInNetns(context.Background(), t.TempDir(), options{mcoSrc: src}, nil, &out)
	var skip skipMCO
	if !errors.As(err, &skip) || !strings.HasPrefix(skip.why, "building "+filepath.Join(src, "cmd/machine-config-server")+": ") {
		t.Fatalf("error %v, want a skip naming the build", err)
	}
}

// The bootstrap server's base directory holds the pool's render under the
// name the master pool's status points at.
func TestWriteMCOBase(t *testing.T) {
	f, err := newFixture(t.TempDir(), options{pool: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "mco")
	name, err := writeMCOBase(base, "../../../fixtures/cluster", "worker", f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "rendered-worker-") {
		t.Fatalf("name %q", name)
	}
	var pool struct {
		Metadata struct{ Name string }
		Status   struct{ Configuration struct{ Name string } }
	}
	readJSON(t, filepath.Join(base, "machine-pools", "master.yaml"), &pool)
	if pool.Metadata.Name != "master" || pool.Status.Configuration.Name != name {
		t.Fatalf("pool %+v, want master at %s", pool, name)
	}
	var mc struct {
		Metadata struct{ Name string }
		Spec     struct{ Config json.RawMessage }
	}
	readJSON(t, filepath.Join(base, "machine-configs", name+".yaml"), &mc)
	if mc.Metadata.Name != name || specOf(mc.Spec.Config) == "?" {
		t.Fatalf("machine config %s, spec %s", mc.Metadata.Name, specOf(mc.Spec.Config))
	}
	var cc struct {
		Spec struct{ KubeAPIServerServingCAData []byte }
	}
	readJSON(t, filepath.Join(base, "controller-config", "machine-config-controller.yaml"), &cc)
	if len(cc.Spec.KubeAPIServerServingCAData) == 0 {
		t.Error("controller config without the tree's kube-apiserver CA")
	}
	if kc, err := os.ReadFile(filepath.Join(base, "kubeconfig")); err != nil || !strings.Contains(string(kc), "certificate-authority-data: ") {
		t.Fatalf("kubeconfig %q (%v)", kc, err)
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// OpenShift's row is printed beside the others and its figures, however
// bad, do not decide the exit code: mcs's do.
func TestReportMCORow(t *testing.T) {
	o := options{goalTime: 10 * time.Second, goalRatio: 1.1, goalRSSMiB: 200}
	mcs := &target{name: "mcs", gated: true}
	bare := &target{name: "bare"}
	mco := &target{name: "mco", reportOnly: true}
	run := func(t *target, round int, took time.Duration, failures int, peak float64) stormRun {
		return stormRun{target: t, round: round, out: outcome{took: took, failures: failures,
			latency: []time.Duration{took / 2, took}}, peakMiB: peak}
	}
	for _, c := range []struct {
		name    string
		mcsTook time.Duration
		want    error
	}{
		{"mcs meets the goals", 3 * time.Second, nil},
		{"mcs misses one", 4 * time.Second, errGoalMissed},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs := []stormRun{run(mcs, 0, c.mcsTook, 0, 90), run(bare, 0, 3*time.Second, 0, 70), run(mco, 0, 150*time.Second, 17, 900)}
			var out bytes.Buffer
			if err := report(&out, o, []*target{mcs, bare, mco}, runs); !errors.Is(err, c.want) {
				t.Fatalf("report: %v, want %v\n%s", err, c.want, &out)
			}
			for _, want := range []string{
				`(?m)^mco\s+150\.00 \[150\.00–150\.00\] \(1\)\s+75000\s+75000\s+150000\s+17\s+0\s+0\.00\s+900$`,
				`(?m)^mco/bare completion, paired by round \(reported, not gated\): 50\.000`,
			} {
				if !regexp.MustCompile(want).MatchString(out.String()) {
					t.Errorf("no line %s in\n%s", want, &out)
				}
			}
			if strings.Contains(out.String(), "GOAL MISSED: 17") {
				t.Errorf("mco's failures counted against the goals:\n%s", &out)
			}
		})
	}
}

// A reported-only server that fails (its process gone) leaves the run;
// the others' storms go on.
func TestRoundsDropReportOnly(t *testing.T) {
	o, err := parseFlags([]string{"-n", "4", "-inflight", "2", "-addrs", "2", "-eras", "v2.27.0", "-rounds", "2"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFixture(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"ignition":{"version":"3.6.0"}}`)
	bare := smokeServer(t, f, o, [][]byte{body})
	bare.want = [][]byte{body}
	bare.cmd = exec.Command("sleep", "60") // a process whose figures one() reads
	if err := bare.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bare.stop)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	mco := &target{name: "mco", addr: bare.addr, cmd: gone, reportOnly: true}
	var out bytes.Buffer
	runs, err := rounds(context.Background(), o, f, []*target{bare, mco}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	if len(runs) != 2 || runs[0].target != bare || runs[1].target != bare || runs[0].out.failures != 0 {
		t.Fatalf("%d runs, want bare's two\n%s", len(runs), &out)
	}
	if n := strings.Count(out.String(), "mco: dropped from the run: "); n != 1 {
		t.Fatalf("dropped %d times, want once\n%s", n, &out)
	}
	// The report names it, without figures.
	out.Reset()
	if err := report(&out, o, []*target{bare, mco}, runs); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^mco\s+no storm completed$`).MatchString(out.String()) {
		t.Fatalf("report without mco's line:\n%s", &out)
	}
}

// With MCS_MCO_BIN (a machine-config-server binary) or MCS_MCO_SRC (a
// machine-config-operator checkout, built here): a small storm with
// OpenShift's server in its own network namespace, every node of the eras
// it answers served its bytes.
func TestMCOStorm(t *testing.T) {
	src, bin := os.Getenv("MCS_MCO_SRC"), os.Getenv("MCS_MCO_BIN")
	if src == "" && bin == "" {
		t.Skip("set MCS_MCO_BIN to a machine-config-server binary or MCS_MCO_SRC to a git clone of " + mcoRepo +
			" (docs/performance.md) to storm OpenShift's server")
	}
	if testing.Short() {
		t.Skip("-short: builds mcs and runs three servers")
	}
	dir := t.TempDir()
	mcs := filepath.Join(dir, "mcs")
	if b, err := exec.Command("go", "build", "-o", mcs, "../../mcs").CombinedOutput(); err != nil {
		t.Fatalf("building mcs: %v\n%s", err, b)
	}
	args := []string{"-mcs", mcs, "-tree", "../../../fixtures/cluster", "-n", "60", "-inflight", "20", "-addrs", "5",
		"-rounds", "1", "-goal-ratio", "1000", "-goal-time", "2m"}
	if src != "" {
		args = append(args, "-mco-src", src)
	} else {
		args = append(args, "-mco-bin", bin)
	}
	t.Setenv("STORM_TEST_AS_MAIN", "1") // the storm starts this binary again, as storm netns and storm bare
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	for _, want := range []string{
		`(?m)^mco: OpenShift's machine-config-server bootstrap \(.*\), pool master serving rendered-worker-`,
		`(?m)^mco: v2\.27\.0\s+gets spec 3\.\d\.0, \d+ bytes`,
		`(?m)^1\s+mco\s+[\d.]+s(\s+\d+ms){3}\s+0\s`,
		`(?m)^mco/bare completion, paired by round \(reported, not gated\): `,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("no line %s in\n%s", want, &out)
		}
	}
}
