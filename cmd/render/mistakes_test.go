package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestMistakes runs what an admin gets wrong, each against a tree under
// testdata/mistakes, and holds every word render says back in a golden
// file: the exit status, stdout and stderr. Each message must be true and
// name the line of the user's own file.
func TestMistakes(t *testing.T) {
	toRoot(t)
	for _, tc := range mistakes() {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := cli(t, "", tc.args...)
			got := fmt.Sprintf("$ render %v\nexit %d\n--- stdout\n%s--- stderr\n%s", tc.args, code, out, errs)
			check(t, filepath.Join("cmd", "render", "testdata", "golden", "mistakes", tc.name+".txt"), got)
		})
	}
}

type mistake struct {
	name string
	args []string
}

// mistakes are TestMistakes' cases, paths from the repository's root.
func mistakes() []mistake {
	tree := func(name string) string { return filepath.Join("cmd", "render", "testdata", "mistakes", name) }
	return append(positionMistakes(tree), []mistake{
		// A typo of kernelArguments loses the argument without a word.
		{"kernelargs-typo", []string{tree("kernelargs-typo")}},
		// A typo in a pool's selector: an error at its line, not "the
		// selector is empty" of a field the pool never had.
		{"pool-typo", []string{tree("pool-typo")}},
		// metadata.label: an orphan the server never mentions.
		{"label-typo", []string{tree("label-typo")}},
		// Two MachineConfigs write one file: the later wins, and says so.
		{"overridden-file", []string{tree("overridden-file")}},
		{"overridden-file-explain", []string{"--explain", tree("overridden-file")}},
		// A later MachineConfig sets only the mode of an earlier one's
		// file: --explain credits the file to the one whose contents are
		// rendered, and the mode to the later one, as the notice says.
		{"overridden-mode-explain", []string{"--explain", tree("overridden-mode")}},
		// A tree named twice: not "defined in" the very same file.
		{"tree-named-twice", []string{tree("overridden-file"), tree("overridden-file")}},
		// An empty tree renders nothing: an error, not {"items":[]}.
		{"empty-tree", []string{tree("empty")}},
		// Positions in the YAML, not in the JSON the loader made of it.
		{"relative-path", []string{tree("relative-path")}},
		{"relative-path-spec2", []string{tree("relative-path-spec2")}},
		{"version-number", []string{tree("version-number")}},
		// The help says a tree without pools gets master and worker.
		{"default-pool-without-configs", []string{"--pool", "master", tree("no-pools")}},
		{"unknown-pool-without-pools", []string{"--pool", "infra", tree("no-pools")}},
		// --explain explains a pool the ceiling refuses.
		{"explain-above-ceiling", []string{"--max-spec", "3.2.0", "--explain", filepath.Join("fixtures", "features", "tang-advertisement-3.4")}},
		// --format and --pretty shape output --explain does not print.
		{"explain-with-format", []string{"--explain", "--format", "ignition", "--pool", "worker", tree("no-pools")}},
		// One pool of a tree is a List like two; one --pool is its MachineConfig.
		{"one-pool-tree-is-a-list", []string{"--pretty", tree("no-pools")}},
		{"one-pool-asked-is-a-machineconfig", []string{"--pretty", "--pool", "worker", tree("no-pools")}},
		// A mistyped pool is a usage error with the pool meant, never a
		// diff of nothing that passes every --fail-on condition.
		{"diff-pool-typo", []string{"diff", "--pool", "Worker", "--fail-on", "any-change,era-loss", filepath.Join(diffDir, "base"), filepath.Join(diffDir, "luks-discard")}},
		// Typos that would drop a MachineConfig from every pool: refused
		// with what was meant; a kind of the group render does not read
		// stays a notice.
		{"kind-typo", []string{tree("kind-typo")}},
		{"apiversion-typo", []string{tree("apiversion-typo")}},
		{"role-value-typo", []string{tree("role-value-typo")}},
		{"role-key-typo", []string{tree("role-key-typo")}},
		{"other-kind-skipped", []string{"--pool", "worker", tree("other-kind-skipped")}},
		// A mode written as a string: what to write, in JSON's words.
		{"mode-string", []string{tree("mode-string")}},
		// Two entries of one list with one key: which key, and its value.
		{"duplicate-file", []string{tree("duplicate-file")}},
		// A broken .json file: a JSON mistake at its line and column.
		{"broken-json", []string{tree("broken-json")}},
		{"pool-typo-did-you-mean", []string{"--pool", "wroker", filepath.Join("fixtures", "cluster")}},
	}...)
}

// positionMistakes are the cases of issue 45: where a mistake is said to be
// (file, line, column) and what was meant.
func positionMistakes(tree func(string) string) []mistake {
	return []mistake{
		// Positions are of the user's own text: the mistyped key's line and
		// column (not its list item's); the line whose indentation is wrong
		// (not the block's first); a Butane typo's, with the key meant and
		// the MachineConfig it makes.
		{"contents-typo", []string{tree("contents-typo")}},
		{"yaml-indent", []string{tree("yaml-indent")}},
		{"butane-typo", []string{tree("butane-typo")}},
		// --output github: invalid input is an error annotation on its
		// file, line and column, as findings are.
		{"diff-github-typo", []string{"diff", "--output", "github", filepath.Join(diffDir, "base"), tree("contents-typo")}},
		{"diff-github-yaml-indent", []string{"diff", "--output", "github", filepath.Join(diffDir, "base"), tree("yaml-indent")}},
		{"diff-github-butane-typo", []string{"diff", "--output", "github", tree("butane-typo"), filepath.Join(diffDir, "base")}},
		// A mistyped flag: the flag meant, as for a mistyped pool.
		{"flag-typo", []string{"--pretyy", filepath.Join("fixtures", "cluster")}},
		{"diff-flag-typo", []string{"diff", "--outptu", "github", filepath.Join(diffDir, "base"), filepath.Join(diffDir, "luks-discard")}},
		// Kernel arguments above --max-spec: the way out the README quotes.
		{"max-spec-kernel-arguments", []string{"--max-spec", "3.2.0", filepath.Join("fixtures", "features", "kargs-3.3")}},
	}
}
