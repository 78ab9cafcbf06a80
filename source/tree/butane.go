package tree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/render"
)

// butaneLocals checks the files a Butane config embeds from beside it
// (local:, contents_local:, and storage trees) by the loader's rules before
// Butane reads them, as it does with no limit and no check of their type: a
// FIFO there would block it, /dev/zero never end. Anything else wrong with
// them (missing, outside the directory) is left for Butane to report.
func (b *budget) butaneLocals(file string, data []byte) []*render.Error {
	var doc any
	if yaml.Unmarshal(data, &doc) != nil {
		return nil // Butane reports it
	}
	dir := filepath.Dir(file)
	var errs []*render.Error
	eachLocal(doc, convert.NewPath(), func(at convert.Path, local string, tree bool) {
		p := filepath.Join(dir, filepath.FromSlash(local))
		if rel, err := filepath.Rel(dir, p); err != nil || strings.HasPrefix(rel, "..") {
			return
		}
		if err := b.checkLocal(p, tree); err != nil {
			errs = append(errs, &render.Error{File: file, Path: at, Message: err.Error(), Err: err})
		}
	})
	return errs
}

// checkLocal checks a file Butane is to read, or for a tree each regular
// file in it (Butane walks trees without following links, and reads no other
// kind of file), counting their sizes against the budget.
func (b *budget) checkLocal(p string, tree bool) error {
	info, err := os.Stat(p)
	if err != nil || (tree && !info.IsDir()) {
		return nil // Butane reports it
	}
	if !tree {
		return b.checkLocalFile(p, info)
	}
	return filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		return b.checkLocalFile(q, info)
	})
}

func (b *budget) checkLocalFile(p string, info fs.FileInfo) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("local file %s: %w: %s, so not read", p, errNotRegular, describeMode(info.Mode()))
	}
	if info.Size() > b.next() {
		se := &sizeError{Size: info.Size(), Limit: b.file()}
		b.over(se)
		return fmt.Errorf("local file %s: %w", p, se)
	}
	b.read += info.Size()
	return nil
}

// eachLocal calls f for every local file reference in a Butane document:
// "local" (a directory under storage.trees) and "contents_local" strings.
func eachLocal(v any, at convert.Path, f func(at convert.Path, local string, tree bool)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			s, ok := c.(string)
			switch {
			case ok && k == "local":
				f(at.Append(k), s, inTrees(at))
			case ok && k == "contents_local":
				f(at.Append(k), s, false)
			default:
				eachLocal(c, at.Append(k), f)
			}
		}
	case []any:
		for i, c := range v {
			eachLocal(c, at.Append(i), f)
		}
	}
}

// inTrees says whether at is inside storage.trees, whose local is a
// directory.
func inTrees(at convert.Path) bool {
	parts := at.Parts()
	for i := range len(parts) - 1 {
		if parts[i] == "storage" && parts[i+1] == "trees" {
			return true
		}
	}
	return false
}
