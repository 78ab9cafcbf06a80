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
	verdicts := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			File  string `json:"file"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reader output %q: %v", sc.Text(), err)
		}
		verdicts[byFile[r.File]] = r.Error
		if !r.OK && r.Error == "" {
			verdicts[byFile[r.File]] = "failed"
		}
	}
	if len(verdicts) != len(configs) {
		t.Fatalf("the reader answered for %d of %d configs", len(verdicts), len(configs))
	}
	return verdicts
}
