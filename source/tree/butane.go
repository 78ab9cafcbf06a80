package tree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ignition-mcs/mcs/render"
)

// butaneLocals checks the files a Butane config embeds from beside it
// (local:, contents_local:, ssh_authorized_keys_local: and storage trees)
// by the loader's rules before Butane reads them, as it does with no limit,
// no check of their type (a FIFO there would block it, /dev/zero never
// end) and no check of where a symbolic link leads: each must resolve
// inside tree (the tree read, or the Butane file's directory). Anything
// else wrong with them (missing, a name with ../) is left for Butane.
func (b *budget) butaneLocals(file, tree string, data []byte) []*render.Error {
	dir := filepath.Dir(file)
	var errs []*render.Error
	for _, local := range render.ButaneLocals(data) {
		p := filepath.Join(dir, filepath.FromSlash(local.Name))
		if rel, err := filepath.Rel(dir, p); err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		err := outside(tree, p)
		if err == nil {
			err = b.checkLocal(p, local.Tree)
		}
		if err != nil {
			errs = append(errs, &render.Error{File: file, Object: butaneObject(data), Path: local.At, Message: err.Error(), Err: err})
		}
	}
	return errs
}

// butaneObject names the MachineConfig a Butane config makes, for errors.
func butaneObject(data []byte) string {
	var head struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal(data, &head) != nil || head.Metadata.Name == "" {
		return ""
	}
	return render.KindMachineConfig + "/" + head.Metadata.Name
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
