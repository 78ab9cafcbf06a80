package codecheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocLinks: every relative link and every repository path named in
// README.md and the Markdown under docs/ (and the other READMEs) resolves,
// anchors included, and no document points at a path outside the
// repository (the machine it was written on).
func TestDocLinks(t *testing.T) {
	problems, err := docProblems("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// The check finds a broken link, a wrong anchor, a missing repository path
// and an absolute path, and passes what resolves.
func TestDocLinksFinds(t *testing.T) {
	root := t.TempDir()
	write := func(name, s string) {
		os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(root, name), []byte(s), 0o644)
	}
	write("render/x.go", "package render\n")
	write("docs/a.md", "# Title\n\n## Second part (issue 12)\n")
	write("README.md", "[ok](docs/a.md) [anchor](docs/a.md#second-part-issue-12) [web](https://example.com) `render/x.go` `render/` `/etc/issue.d/x`\n"+
		"[gone](docs/b.md) [bad anchor](docs/a.md#third) `render/y.go` see `/work/shared/x.md`\n```\n`render/z.go` in a block is output\n```\n")
	got, err := docProblems(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:2: link docs/b.md: no such file",
		"README.md:2: link docs/a.md#third: docs/a.md has no heading #third",
		"README.md:2: path render/y.go: no such file in the repository",
		"README.md:2: path /work/shared/x.md: an absolute path outside the repository; name it relative to the repository, or say where it comes from",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// A repository path: top-level entry first, then more parts; a
	// trailing ":LINE" is allowed.
	repoPath = regexp.MustCompile(`^([A-Za-z0-9_.-]+/[A-Za-z0-9_.*/-]*?)(?::\d+)?$`)
	// Absolute paths of the machines this was written on, never of a node.
	hostPath = regexp.MustCompile(`^/(work|home|root|tmp|Users)/`)
)

// docProblems checks every Markdown file of the repository at root
// (testdata aside).
func docProblems(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root) {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	top, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var tops []string
	for _, e := range top {
		tops = append(tops, e.Name())
	}
	var out []string
	for _, f := range files {
		ps, err := checkDoc(root, f, tops)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

func checkDoc(root, file string, tops []string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(root, file)
	var out []string
	fenced := false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		at := fmt.Sprintf("%s:%d: ", rel, i+1)
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			if msg := checkLink(root, file, m[1]); msg != "" {
				out = append(out, at+"link "+m[1]+": "+msg)
			}
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			if msg := checkPath(root, m[1], tops); msg != "" {
				out = append(out, at+"path "+m[1]+": "+msg)
			}
		}
	}
	return out, nil
}

// checkLink resolves a link relative to the file holding it.
func checkLink(root, file, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
		return ""
	}
	if hostPath.MatchString(target) {
		return "an absolute path outside the repository"
	}
	path, anchor, _ := strings.Cut(target, "#")
	p := filepath.Join(filepath.Dir(file), path)
	if _, err := os.Stat(p); err != nil {
		return "no such file"
	}
	if anchor != "" && strings.HasSuffix(path, ".md") {
		data, _ := os.ReadFile(p)
		if !slices.Contains(anchors(string(data)), anchor) {
			return fmt.Sprintf("%s has no heading #%s", path, anchor)
		}
	}
	return ""
}

// checkPath checks a code span that names a repository path (its first
// part a top-level entry of the repository): it must exist, or match a
// file when it is a glob. Other spans (node paths, commands) pass.
func checkPath(root, span string, tops []string) string {
	if hostPath.MatchString(span) {
		return "an absolute path outside the repository; name it relative to the repository, or say where it comes from"
	}
	m := repoPath.FindStringSubmatch(span)
	if m == nil {
		return ""
	}
	first, _, _ := strings.Cut(m[1], "/")
	if !slices.Contains(tops, first) {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(root, m[1]))
	if len(matches) == 0 {
		return "no such file in the repository"
	}
	return ""
}

// anchors are the GitHub anchors of a Markdown file's headings.
func anchors(md string) []string {
	var out []string
	for _, line := range strings.Split(md, "\n") {
		h := strings.TrimLeft(line, "#")
		if h == line || !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// The README states the Go version go.mod requires.
func TestGoVersionStated(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Needs Go " + string(m[1]) + " or newer"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q (go.mod: go %s)", want, m[1])
	}
}

// portForward is a port-forward command in a document.
var portForward = regexp.MustCompile(`(?:oc|kubectl)\s+(.*?)port-forward\s+(\S+)[^\n` + "`" + `]*`)

// TestDocPortForwards: a port-forward in the docs names its namespace
// (the resources live in mcs or OpenShift's namespaces, never default)
// and is not chained with && (it runs until stopped, so what follows never
// runs).
func TestDocPortForwards(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range portForward.FindAllStringSubmatch(string(b), -1) {
			n++
			if !strings.Contains(m[0], "-n ") && !strings.Contains(m[0], "--namespace") {
				t.Errorf("%s: %q names no namespace", f, m[0])
			}
			if strings.Contains(m[0], "&&") {
				t.Errorf("%s: %q: a port-forward runs until stopped, so what follows && never runs", f, m[0])
			}
		}
	}
	if n < 3 {
		t.Fatalf("only %d port-forward commands found: the pattern is broken", n)
	}
}
