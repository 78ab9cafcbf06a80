package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/servetest"
	"github.com/ignition-mcs/mcs/internal/testkit"
	"github.com/ignition-mcs/mcs/render"
)

// TestImage builds the image exactly as `make image` does and runs it as
// deploy/ does: non-root, read-only root filesystem, the tree mounted
// read-only. It skips only where no container engine is installed or none can
// start a container; under CI=true (where the Makefile installs podman) both
// fail it.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		testkit.Missing(t, "podman is not installed (make container-engine installs it)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	image := fmt.Sprintf("localhost/mcs:test-%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	build := exec.CommandContext(ctx, filepath.Join(root, "hack/image/build.sh"), image)
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/image/build.sh: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", image).Run() })

	if user := podmanOut(t, podman, "image", "inspect", "--format", "{{.Config.User}}", image); user != "65532:65532" {
		t.Errorf("image user = %q, want 65532:65532 (non-root)", user)
	}
	size, _ := strconv.ParseInt(podmanOut(t, podman, "image", "inspect", "--format", "{{.Size}}", image), 10, 64)
	// The image is the stripped static binary and nothing else: 45 MB before
	// mcs start/bootstrap/preflight, the PKI manager and the controller's
	// guards linked more of openshift/api and client-go (59 MB at 2910085).
	if size <= 0 || size > 64<<20 {
		t.Errorf("image size = %d bytes, want (0, 64 MiB]", size)
	}

	fixtures := filepath.Join(root, "fixtures/cluster")
	args := append(runtimeArgs(), "run", "-d", "--rm", "--read-only", "--network", "host",
		"--volume", fixtures+":/etc/mcs/machineconfigs:ro")
	args = append(args, ulimitArgs()...)
	args = append(args, image, "--dir", "/etc/mcs/machineconfigs", "--listen-plain", "127.0.0.1:0", "--listen-tls", "")
	runOut, err := exec.CommandContext(ctx, podman, args...).CombinedOutput()
	if err != nil {
		// The image was built, so the engine is there; it may still be unable
		// to start any container in a restricted sandbox.
		testkit.Missing(t, "podman run: %v: %s", err, runOut)
	}
	id := strings.TrimSpace(string(runOut))
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command(podman, "logs", id).CombinedOutput()
			t.Logf("container log:\n%s", logs)
		}
		_ = exec.Command(podman, "rm", "-f", id).Run()
	})

	base := containerListening(t, podman, id, time.Minute)
	waitReady(t, base+"/readyz", time.Minute)

	if users := podmanOut(t, podman, "top", id, "user"); !strings.Contains(users, "65532") || strings.Contains(users, "root") {
		t.Errorf("container process user:\n%s\nwant 65532, never root", users)
	}
	if ro := podmanOut(t, podman, "inspect", "--format", "{{.HostConfig.ReadonlyRootfs}}", id); ro != "true" {
		t.Errorf("ReadonlyRootfs = %s, want true", ro)
	}

	checkServedPool(t, base+"/config/worker", fixtures, "worker")
}

// checkServedPool fetches url as Ignition v2.27 would and checks the body is
// the pool's render at the client's spec, with every file the render holds.
func checkServedPool(t *testing.T, url, dir, pool string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1")
	req.Header.Set("User-Agent", "Ignition/v2.27.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	parsed, err := convert.Parse(body)
	if err != nil {
		t.Fatalf("served body does not parse: %v", err)
	}
	set := servetest.Load(t, dir)
	want, err := set.RenderPool(pool, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The highest spec the client reads: 3.5.0 expresses every pool.
	if got := parsed.Version.String(); got != "3.5.0" {
		t.Errorf("served spec %s, want 3.5.0 (rendered at %s)", got, want.Spec)
	}
	served := map[string]bool{}
	for _, f := range parsed.Config.Storage.Files {
		served[f.Path] = true
	}
	for _, f := range want.Config.Storage.Files {
		if !served[f.Path] {
			t.Errorf("served config lacks %s", f.Path)
		}
	}
}

// runtimeArgs prefers runc: crun refuses hosts with hybrid cgroups (v1
// controllers beside a v2 mount), which runc runs on, as it does on v2.
func runtimeArgs() []string {
	if _, err := exec.LookPath("runc"); err == nil {
		return []string{"--runtime", "runc"}
	}
	return nil
}

// ulimitArgs sets the limits podman would otherwise raise to its defaults,
// which a container host without CAP_SYS_RESOURCE refuses.
func ulimitArgs() []string {
	var out []string
	for _, l := range []struct {
		name string
		res  int
	}{{"nofile", unix.RLIMIT_NOFILE}, {"nproc", unix.RLIMIT_NPROC}} {
		var r unix.Rlimit
		n := uint64(4096)
		if err := unix.Getrlimit(l.res, &r); err == nil && r.Cur < n {
			n = r.Cur
		}
		out = append(out, "--ulimit", fmt.Sprintf("%s=%d:%d", l.name, n, n))
	}
	return out
}

// listening is the line mcs writes to stdout once its plain listener is
// bound.
var listening = regexp.MustCompile(`listening on (http://\S+)`)

// containerListening is http://host:port of container id's plain listener,
// bound on port 0 on the host's network, read from its log.
func containerListening(t *testing.T, podman, id string, limit time.Duration) string {
	t.Helper()
	var base string
	testkit.Eventually(t, limit, "mcs listening in container "+id, func() error {
		out, err := exec.Command(podman, "logs", id).CombinedOutput()
		if err != nil {
			return fmt.Errorf("podman logs: %w: %s", err, out)
		}
		m := listening.FindSubmatch(out)
		if m == nil {
			return fmt.Errorf("no listening line in its log:\n%s", out)
		}
		base = string(m[1])
		return nil
	})
	return base
}

func podmanOut(t *testing.T, podman string, args ...string) string {
	t.Helper()
	out, err := exec.Command(podman, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func waitReady(t *testing.T, url string, limit time.Duration) {
	t.Helper()
	testkit.Eventually(t, limit, url+" ready", func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})
}
