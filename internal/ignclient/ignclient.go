// Package ignclient runs the real Ignition clients' fetch and files stages against a config server, into a scratch root.
package ignclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vincent-petithory/dataurl"

	"github.com/ignition-mcs/mcs/internal/syncbuf"
)

// Client is one built Ignition binary.
type Client struct {
	Bin     string
	Spec2   bool   // a v0.x client: reads spec 2.x, runs with --oem instead of --platform
	Version string // as the client reports it, "v2.27.0"
	// Spec is the newest config spec the client reads, "3.4.0".
	Spec string
	// NoStateFlags: the client predates --state-file and --neednet (v2.9).
	NoStateFlags bool
	// NoFetchStage: the client predates the fetch stage (v2.0); its first
	// stage, here files, fetches the config.
	NoFetchStage bool
	// ChrootUsers: the client creates users by running useradd chrooted
	// into the root (v0.x, v2.0), which a scratch root cannot serve; test
	// files and units with it, not users.
	ChrootUsers bool
}

func (c Client) String() string { return "ignition " + c.Version }

// Headers reports whether the client's pointer config can carry HTTP
// headers (a bearer token): spec 3.1 and newer can, 3.0 and 2.x cannot.
func (c Client) Headers() bool { return !c.Spec2 && c.Spec != "3.0.0" }

// Options tune one run; the zero value runs like a node's first boot.
type Options struct {
	// Dir is the scratch directory (it should be empty); run makes one with
	// mkdirScratch when empty, which the caller then owns. For users to work
	// as root, uid 1000 must be able to reach Dir/root/home/core.
	Dir string
	// Token, when set, goes into the pointer config as an
	// "Authorization: Bearer" httpHeader; spec 2 cannot carry headers.
	Token string
	// PointerVersion is the spec of the pointer config: default 3.1.0, the
	// lowest with httpHeaders, which every spec-3 client from v2.3 reads,
	// and 3.0.0 for a client reading only that; spec-2 clients always get
	// 2.2.0.
	PointerVersion string
	// CA, when set, is a PEM bundle the pointer config trusts, as the
	// installer writes it: ignition.security.tls.certificateAuthorities
	// with the bundle as a data URL (spec 2 and 3 alike).
	CA []byte
	// Pointer, when set, is the pointer config itself, used as given (one
	// read from a cluster's user-data Secret, say); url, Token,
	// PointerVersion, CA and HTTPTotal are then not used.
	Pointer []byte
	// HTTPTotal sets ignition.timeouts.httpTotal in the pointer config, which
	// bounds the client's retries of 5xx answers; zero leaves it unset, as
	// real pointer configs do, and the client retries until ctx ends.
	HTTPTotal time.Duration
	// FetchTimeout is --fetch-timeout; default 10s.
	FetchTimeout time.Duration
	// Unshare runs the files stage under `unshare -r` even as root; it is
	// always used when not root, since the files stage chowns what it writes.
	Unshare bool
	// Logger receives one line per stage run; nil discards them.
	Logger *slog.Logger
}

// Result is what one run left behind.
type Result struct {
	Dir  string // scratch directory
	Root string // Dir/root, the node's "/"
	// Log is the combined output of the stages that ran, each preceded by a
	// "== ignition vX stage S" line.
	Log    string
	Stages []Stage
}

// Stage is one client invocation.
type Stage struct {
	Name     string
	ExitCode int // -1 when killed
	Duration time.Duration
}

// stageError is a stage that did not finish successfully.
type stageError struct {
	Version  string
	Stage    string
	ExitCode int    // -1 when the process was killed (see Err)
	Last     string // the last error-level line of the stage's log, if any
	Err      error
}

func (e *stageError) Error() string {
	msg := fmt.Sprintf("ignition %s stage %s: %v", e.Version, e.Stage, e.Err)
	if e.Last != "" {
		msg += ": " + e.Last
	}
	return msg
}

func (e *stageError) Unwrap() error { return e.Err }

// Paths inside the scratch directory.
const (
	pointerFile = "pointer.ign"
	cmdlineFile = "cmdline"
	sysconfDir  = "sysconf"
	rootDir     = "root"
	runDir      = "run"
)

// run runs the client's fetch and files stages against url the way a booting
// node does: a pointer config that merges (spec 3) or appends (spec 2) url,
// then the files stage writing into a scratch root seeded with a core user.
// The disks, mount, umount and kargs stages touch the host and never run.
// On a failed stage run returns the partial Result with a *stageError; when
// ctx ends first the error wraps ctx.Err(). live, when not nil, also
// receives the stages' output as it is printed (Running.Log).
func run(ctx context.Context, c Client, url string, opts Options, live io.Writer) (*Result, error) {
	if c.Bin == "" || c.Version == "" {
		return nil, fmt.Errorf("ignclient: client %+v needs Bin and Version", c)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fetchTimeout := opts.FetchTimeout
	if fetchTimeout == 0 {
		fetchTimeout = 10 * time.Second
	}
	if opts.PointerVersion == "" && c.Spec == "3.0.0" {
		opts.PointerVersion = c.Spec
	}
	pointer, err := pointerConfig(c.Spec2, url, opts)
	if err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = mkdirScratch(); err != nil {
			return nil, err
		}
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("ignclient: %w", err)
	}
	res := &Result{Dir: dir, Root: filepath.Join(dir, rootDir)}
	if err := prepare(dir, pointer); err != nil {
		return res, err
	}

	var log strings.Builder
	defer func() { res.Log = log.String() }()
	stages := []string{"fetch", "files"}
	if c.NoFetchStage {
		stages = stages[1:]
	}
	for _, stage := range stages {
		argv := append([]string{c.Bin}, stageArgs(c, stage, dir, fetchTimeout)...)
		if stage == "files" && (opts.Unshare || os.Geteuid() != 0) {
			unshare, err := exec.LookPath("unshare")
			if err != nil {
				return res, fmt.Errorf("ignclient: the files stage needs root or unshare(1): %w", err)
			}
			argv = append([]string{unshare, "--map-root-user"}, argv...)
		}
		out := io.Writer(&log)
		if live != nil {
			out = io.MultiWriter(&log, live)
		}
		fmt.Fprintf(out, "== %s stage %s\n", c, stage)
		st, err := runStage(ctx, c, stage, argv, env(dir), out)
		res.Stages = append(res.Stages, st)
		logger.Debug("ignition stage", "client", c.Version, "stage", stage, "exit", st.ExitCode, "duration", st.Duration)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// mkdirScratch makes a directory for run under os.TempDir (/tmp). Unlike
// t.TempDir's, its parents are open to others: the clients write a user's
// SSH keys with that user's fsuid, which must reach home/core.
func mkdirScratch() (string, error) {
	dir, err := os.MkdirTemp("", "ignclient-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		return "", fmt.Errorf("ignclient: scratch dir: %w", err)
	}
	return dir, nil
}

// pointerConfig is the config a node boots with: it only points at url.
func pointerConfig(spec2 bool, url string, opts Options) ([]byte, error) {
	if opts.Pointer != nil {
		return opts.Pointer, nil
	}
	if spec2 {
		if opts.Token != "" {
			return nil, errors.New("ignclient: a spec-2 pointer config cannot carry an Authorization header")
		}
		ign := map[string]any{
			"version": "2.2.0",
			"config":  map[string]any{"append": []any{map[string]any{"source": url}}},
		}
		return json.Marshal(map[string]any{"ignition": pointerCommon(ign, opts)})
	}
	version := opts.PointerVersion
	if version == "" {
		version = "3.1.0"
	}
	if !strings.HasPrefix(version, "3.") {
		return nil, fmt.Errorf("ignclient: pointer config version %q: a spec-3 client needs 3.x", version)
	}
	src := map[string]any{"source": url}
	if opts.Token != "" {
		if version == "3.0.0" {
			return nil, errors.New("ignclient: pointer config 3.0.0 cannot carry httpHeaders (3.1.0 can)")
		}
		src["httpHeaders"] = []any{map[string]any{"name": "Authorization", "value": "Bearer " + opts.Token}}
	}
	ign := map[string]any{
		"version": version,
		"config":  map[string]any{"merge": []any{src}},
	}
	return json.Marshal(map[string]any{"ignition": pointerCommon(ign, opts)})
}

// pointerCommon adds what spec 2.2 and 3.x spell alike: timeouts, TLS trust.
func pointerCommon(ign map[string]any, opts Options) map[string]any {
	if opts.HTTPTotal > 0 {
		ign["timeouts"] = map[string]any{"httpTotal": seconds(opts.HTTPTotal)}
	}
	if len(opts.CA) > 0 {
		ca := map[string]any{"source": dataurl.New(opts.CA, "text/plain", "charset", "utf-8").String()}
		ign["security"] = map[string]any{"tls": map[string]any{"certificateAuthorities": []any{ca}}}
	}
	return ign
}

// seconds rounds up: httpTotal is whole seconds, and 0 would mean "forever".
func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Seed files give the scratch root the users an RHCOS image ships: the v2
// clients modify an existing core user with usermod --root, which needs these.
var seed = []struct {
	path string
	mode fs.FileMode
	data string
}{
	{"etc/passwd", 0o644, "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n"},
	{"etc/group", 0o644, "root:x:0:\nwheel:x:10:core\ncore:x:1000:\n"},
	{"etc/shadow", 0o000, "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n"},
	{"etc/gshadow", 0o000, "root:::\nwheel:::core\ncore:!::\n"},
}

func prepare(dir string, pointer []byte) error {
	for _, d := range []string{sysconfDir, runDir, rootDir + "/etc", rootDir + "/root", rootDir + "/home/core"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("ignclient: scratch dir: %w", err)
		}
	}
	for _, s := range seed {
		p := filepath.Join(dir, rootDir, s.path)
		if err := os.WriteFile(p, []byte(s.data), s.mode); err != nil {
			return fmt.Errorf("ignclient: seed %s: %w", s.path, err)
		}
		// WriteFile's mode is filtered by the umask; the seed must not be.
		if err := os.Chmod(p, s.mode); err != nil {
			return fmt.Errorf("ignclient: seed %s: %w", s.path, err)
		}
	}
	// Only root can hand the home to uid 1000; elsewhere users cannot be
	// tested anyway, as `unshare -r` maps a single uid.
	if os.Geteuid() == 0 {
		if err := os.Lchown(filepath.Join(dir, rootDir, "home/core"), 1000, 1000); err != nil {
			return fmt.Errorf("ignclient: seed home/core: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, cmdlineFile), nil, 0o644); err != nil {
		return fmt.Errorf("ignclient: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, pointerFile), pointer, 0o644); err != nil {
		return fmt.Errorf("ignclient: %w", err)
	}
	return nil
}

func stageArgs(c Client, stage, dir string, fetchTimeout time.Duration) []string {
	args := []string{
		"--stage", stage,
		"--root", filepath.Join(dir, rootDir),
		"--config-cache", filepath.Join(dir, runDir, "ignition.json"),
		"--fetch-timeout", fetchTimeout.String(),
		"--log-to-stdout",
	}
	if c.Spec2 {
		return append([]string{"--oem", "file"}, args...)
	}
	args = append([]string{"--platform", "file"}, args...)
	if c.NoStateFlags {
		return args
	}
	return append(args,
		"--state-file", filepath.Join(dir, runDir, "state"),
		"--neednet", filepath.Join(dir, runDir, "neednet"))
}

// env is the whole environment of a client: nothing of the caller's leaks in
// (no IGNITION_* overrides, no proxies). The clients read only the variables
// they know; v2.27 knows all of these, v2.24 and v0.35 only CONFIG_FILE and
// SYSTEM_CONFIG_DIR, and have the kernel command line fixed at build.
func env(dir string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	sysconf := filepath.Join(dir, sysconfDir)
	return []string{
		"PATH=" + path,
		"LC_ALL=C",
		"IGNITION_CONFIG_FILE=" + filepath.Join(dir, pointerFile),
		"IGNITION_KERNEL_CMDLINE_PATH=" + filepath.Join(dir, cmdlineFile),
		"IGNITION_SYSTEM_CONFIG_DIR=" + sysconf,
		"IGNITION_SYSTEM_LOCAL_CONFIG_DIR=" + sysconf,
		"IGNITION_SYSTEM_RUNTIME_CONFIG_DIR=" + sysconf,
	}
}

func runStage(ctx context.Context, c Client, stage string, argv, env []string, log io.Writer) (Stage, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	// One writer for both streams: exec then copies them through one pipe,
	// in the order printed.
	w := io.Writer(&out)
	if log != nil {
		w = io.MultiWriter(&out, log)
	}
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	st := Stage{Name: stage, Duration: time.Since(start), ExitCode: -1}
	if cmd.ProcessState != nil {
		st.ExitCode = cmd.ProcessState.ExitCode()
	}
	if err == nil {
		return st, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = fmt.Errorf("%w (after %s)", ctxErr, st.Duration.Round(time.Millisecond))
	}
	return st, &stageError{Version: c.Version, Stage: stage, ExitCode: st.ExitCode, Last: lastError(out.Bytes()), Err: err}
}

// lastError finds the line that explains a failure; the clients print the
// whole config on some failures, so the last line is rarely the reason.
func lastError(log []byte) string {
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		for _, level := range []string{"CRITICAL", "ERROR", "WARNING"} {
			if strings.HasPrefix(l, level) {
				return strings.TrimSpace(l)
			}
		}
	}
	return ""
}

// ReadFile reads a file of the scratch root by its path on the node
// ("/etc/hostname"); symlinks cannot lead out of the root.
func (r *Result) ReadFile(name string) ([]byte, error) {
	root, err := os.OpenRoot(r.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(nodePath(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Lstat describes a file of the scratch root by its path on the node.
func (r *Result) Lstat(name string) (fs.FileInfo, error) {
	root, err := os.OpenRoot(r.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Lstat(nodePath(name))
}

func nodePath(name string) string {
	p := strings.TrimPrefix(filepath.Clean("/"+name), "/")
	if p == "" {
		return "."
	}
	return p
}

// Running is a run in the background: a node booting while the test changes
// the server under it.
type Running struct {
	c    Client
	done chan struct{}
	res  *Result
	err  error
	live syncbuf.Buffer
}

// Start runs the client in a goroutine, as Boot does; Wait collects it.
func Start(ctx context.Context, c Client, url string, opts Options) *Running {
	r := &Running{c: c, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.res, r.err = run(ctx, c, url, opts, &r.live)
	}()
	return r
}

// Log is what the node has printed so far.
func (r *Running) Log() string { return r.live.String() }

// Done is closed once the run has finished.
func (r *Running) Done() <-chan struct{} { return r.done }

// Wait waits for the run to finish and returns its Result and error (see
// Boot).
func (r *Running) Wait() (*Result, error) {
	<-r.done
	return r.res, r.err
}
