package testkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RollbackReader is the rollback reader `make rollback-reader` builds for
// an Ignition release (v2.10.1: specs up to 3.2; v2.19.0: up to 3.4), or
// the end of the test where it is missing (a failure under CI=true).
func RollbackReader(t testing.TB, version string) string {
	t.Helper()
	bin := ToolsDir("rollback", "rollback-reader-"+version)
	if !Executable(bin) {
		Missing(t, "no rollback reader at %s; run `make rollback-reader`", bin)
	}
	return bin
}

// ReaderVerdicts runs a rollback reader over each config and returns, per
// name, "" when it parsed or the reader's error.
func ReaderVerdicts(t testing.TB, reader string, configs map[string][]byte) map[string]string {
	t.Helper()
	verdicts := map[string]string{}
	readings, _ := readerReadings(t, reader, configs)
	for name, r := range readings {
		verdicts[name] = r.Error
	}
	return verdicts
}

// Reading is what a rollback reader made of one config.
type Reading struct {
	Error  string          // "" when it parsed
	Config json.RawMessage // what it read (encoding/json of its types), when it parsed
}

// ReaderReadings runs a rollback reader over each config and returns, per
// name, what it read. A reader built before it printed what it read is the
// end of the test (see Missing).
func ReaderReadings(t testing.TB, reader string, configs map[string][]byte) map[string]Reading {
	t.Helper()
	readings, stale := readerReadings(t, reader, configs)
	if stale {
		Missing(t, "%s does not print what it read (built from an older main.go); run `make rollback-reader`", reader)
	}
	return readings
}

// readerReadings is ReaderReadings, and whether the reader parsed a config
// without saying what it read.
func readerReadings(t testing.TB, reader string, configs map[string][]byte) (map[string]Reading, bool) {
	t.Helper()
	dir := t.TempDir()
	var args []string
	byFile := map[string]string{}
	for name, cfg := range configs {
		f := filepath.Join(dir, name+".ign")
		if err := os.WriteFile(f, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, f)
		byFile[f] = name
	}
	out, err := exec.Command(reader, args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", reader, err)
	}
	readings := map[string]Reading{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	stale := false
	for sc.Scan() {
		var r struct {
			File   string          `json:"file"`
			OK     bool            `json:"ok"`
			Error  string          `json:"error"`
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reader output %q: %v", sc.Text(), err)
		}
		got := Reading{Error: r.Error, Config: r.Config}
		if !r.OK && r.Error == "" {
			got.Error = "failed"
		}
		stale = stale || r.OK && r.Config == nil
		readings[byFile[r.File]] = got
	}
	if len(readings) != len(configs) {
		t.Fatalf("the reader answered for %d of %d configs", len(readings), len(configs))
	}
	return readings, stale
}
