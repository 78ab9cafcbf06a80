package render

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	butanecommon "github.com/coreos/ignition/v2/butane/config/common"

	"github.com/ignition-mcs/mcs/internal/intake"
)

// Load reads files and trees for render's own tests, which cannot import
// source/tree (it imports render; its tests hold reading to the server's
// rules: limits, links, FIFOs, containment). Every .yaml, .yml, .json and
// .bu file, in lexical order, hidden entries skipped; Butane's local files
// from beside the Butane file.
func Load(paths ...string) (*Set, error) {
	var l Loader
	for _, p := range paths {
		readPath(&l, p)
	}
	return l.Set()
}

// readPath reads a file or a tree into l, as Load does.
func readPath(l *Loader, root string) {
	l.Butane = func(file, name string, data []byte) ([]byte, []intake.Problem, error) {
		return intake.Butane(name, data, butanecommon.TranslateBytesOptions{
			TranslateOptions: butanecommon.TranslateOptions{FilesDir: filepath.Dir(file)},
		})
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json", ".bu":
		default:
			if p != root {
				return nil
			}
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		l.Data(p, data)
		return nil
	})
	if err != nil {
		l.Fail(&Error{File: root, Message: err.Error(), Err: err})
	}
}
