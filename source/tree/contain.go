package tree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// errOutside marks a file refused because a symbolic link on its way
// leads out of the tree being read.
var errOutside = errors.New("outside the tree")

// errAbsolute is a file refused because a symbolic link on its way is
// absolute (os.Root refuses those, wherever they lead) or leads out: Load's
// words, so the watch keys such a file as the load fails on it.
var errAbsolute = fmt.Errorf("%w: a symbolic link on its way is absolute or leads out of the tree (links in a tree must be relative and stay inside it): not read", errOutside)

// outsideError is a file whose path leads out of the tree through a
// symbolic link: one reviewed change adding `innocent.txt -> /var/run/
// secrets/…/token` must not publish the server's token in a config.
type outsideError struct {
	Link     string // the link on the way that leaves the tree
	Target   string // what the link says
	Resolved string // where it leads, every link followed
	Tree     string // the tree, every link followed
}

func (e *outsideError) Error() string {
	to := e.Target
	if e.Resolved != e.Target {
		to += " (" + e.Resolved + ")"
	}
	return fmt.Sprintf("%s is a symbolic link to %s, outside the tree %s: not read (links must stay inside the tree)", e.Link, to, e.Tree)
}

func (e *outsideError) Unwrap() error { return errOutside }

// outside is an *outsideError when p, a path under tree, resolves outside
// it through a symbolic link; nil when it stays inside, and when it cannot
// be resolved (missing, a broken link: reading it reports that).
func outside(tree, p string) error {
	realTree, err := filepath.EvalSymlinks(tree)
	if err != nil {
		return nil
	}
	return outsideReal(tree, realTree, p, false)
}

// outsideReal is outside for a tree already resolved to realTree, for a
// caller checking many paths under it. With abs, a link on the way that
// stays inside but whose target is absolute is errAbsolute, as opening p
// through an os.Root on tree fails (so no remembered key is recalled).
func outsideReal(tree, realTree, p string, abs bool) error {
	rel, err := filepath.Rel(tree, p)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return nil
	}
	cur := tree
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		if err != nil {
			return nil
		}
		if info.Mode()&os.ModeSymlink == 0 {
			continue
		}
		resolved, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return nil
		}
		if !within(realTree, resolved) {
			target, _ := os.Readlink(cur)
			return &outsideError{Link: cur, Target: target, Resolved: resolved, Tree: realTree}
		}
		if abs {
			if target, err := os.Readlink(cur); err == nil && filepath.IsAbs(target) {
				return errAbsolute
			}
		}
	}
	return nil
}

// within says whether p is dir or under it; both are real paths.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}
