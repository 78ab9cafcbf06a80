package tree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ignition-mcs/mcs/render"
)

// Files lists the files a Load of p reads, in the order it reads them: p
// itself when it is not a directory, else the tree's regular files with an
// extension Load reads, hidden entries skipped, symbolic links followed
// (each real file once) but none leading out of p, which is a problem, as
// is a path that cannot be walked. A tool that rewrites what Load reads
// (render lower) walks a tree by it.
func Files(p string) ([]string, []*render.Error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, []*render.Error{fileError(p, err)}
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var out []string
	var errs []*render.Error
	seen := map[string]bool{}
	walkTree(p, func(f string, info fs.FileInfo, err error) error {
		if f != p && strings.HasPrefix(filepath.Base(f), ".") {
			if info != nil && info.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if errors.Is(err, errSymlinkLoop) {
			return nil // Load skips it with a warning
		}
		if err != nil {
			errs = append(errs, fileError(f, err))
			return nil
		}
		read := !info.IsDir() && readExts[strings.ToLower(filepath.Ext(f))]
		if !read && !info.IsDir() {
			return nil
		}
		if err := outside(p, f); err != nil {
			errs = append(errs, &render.Error{File: f, Message: err.Error(), Err: err})
			return fs.SkipDir
		}
		if read && info.Mode().IsRegular() {
			real, err := filepath.EvalSymlinks(f)
			if err == nil && !seen[real] {
				seen[real] = true
				out = append(out, f)
			}
		}
		return nil
	})
	return out, errs
}
