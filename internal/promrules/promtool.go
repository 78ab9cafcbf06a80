package promrules

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// promtoolPath is the path of promtool (Debian's prometheus package, which
// `make promtool` installs), or ends the test: a skip, or under CI=true a
// failure, so that a pipeline cannot pass without having run it.
func promtoolPath(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		testkit.Missing(tb, "no promtool (run `make promtool`): %v", err)
	}
	return path
}

// Load reads the PrometheusRule manifest at path and returns its rules,
// failing the test when it cannot.
func Load(tb testing.TB, path string) []Rule {
	tb.Helper()
	manifest, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	rules, err := parseRules(manifest)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return rules
}

// Check runs `promtool check rules` on the rule groups of the
// PrometheusRule manifest at path, failing the test with what promtool
// said when it refuses them.
func Check(tb testing.TB, path string) {
	tb.Helper()
	if err := check(promtoolPath(tb), path, tb.TempDir()); err != nil {
		tb.Fatal(err)
	}
}

// Test runs `promtool test rules` on the unit-test file at testPath (its
// input_series, alert_rule_test and promql_expr_test, as promtool reads
// them) against the rule groups of the PrometheusRule manifest at
// manifestPath: the test file's rule_files are replaced by them. It fails
// the test with what promtool said when a test fails.
func Test(tb testing.TB, manifestPath, testPath string) {
	tb.Helper()
	if err := test(promtoolPath(tb), manifestPath, testPath, tb.TempDir()); err != nil {
		tb.Fatal(err)
	}
}

func check(promtool, path, dir string) error {
	rules, err := writeRuleFile(path, dir)
	if err != nil {
		return err
	}
	if out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
		return fmt.Errorf("promtool check rules (the groups of %s): %w\n%s", path, err, out)
	}
	return nil
}

func test(promtool, manifestPath, testPath, dir string) error {
	rules, err := writeRuleFile(manifestPath, dir)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(testPath)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := yaml.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", testPath, err)
	}
	spec["rule_files"] = []string{rules}
	out, err := yaml.Marshal(spec)
	if err != nil {
		return err
	}
	tests := filepath.Join(dir, "tests.yaml")
	if err := os.WriteFile(tests, out, 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(promtool, "test", "rules", tests).CombinedOutput(); err != nil {
		return fmt.Errorf("promtool test rules %s (the groups of %s): %w\n%s", testPath, manifestPath, err, out)
	}
	return nil
}

// writeRuleFile writes the rule file of the manifest at path into dir and
// returns its path.
func writeRuleFile(path, dir string) (string, error) {
	manifest, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	file, err := RuleFile(manifest)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	out := filepath.Join(dir, "rules.yaml")
	return out, os.WriteFile(out, file, 0o644)
}
