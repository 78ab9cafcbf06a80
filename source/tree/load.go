// Package tree reads MachineConfig trees and the files Butane configs embed into a render.Loader: within size limits, never blocking on a file, and never outside the tree.
package tree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	butanecommon "github.com/coreos/ignition/v2/butane/config/common"

	"github.com/ignition-mcs/mcs/internal/intake"
	"github.com/ignition-mcs/mcs/render"
)

// Load reads MachineConfigs (.yaml, .yml, .json: one object, several
// documents, or a List), MachineConfigPools, Butane files (.bu, openshift
// variant) and a ControllerConfig from files and directory trees. Objects of
// other kinds are skipped with a notice. The error, when not nil, is an
// *render.Errors listing every problem found.
func Load(paths ...string) (*render.Set, error) {
	var l Loader
	for _, p := range paths {
		l.Path(p)
	}
	return l.Set()
}

// Loader reads files and trees into its render.Loader; Load is a Loader
// over paths.
type Loader struct {
	render.Loader
	// Limits bound the bytes read from files; zero fields take the defaults.
	Limits Limits
	// Reading, when set, is told each file's path before it is opened, so
	// a load that hangs (on a dead NFS server, say) can be named.
	Reading func(path string)

	skipped []*render.Error // files not read: not regular, or a symlink loop
	files   budget          // see budget: Limits are copied in as each file is read
	// tree is what the path being read may reach through links: the
	// directory named, or a named file's directory (its Butane files'
	// local files must stay in it).
	tree string
}

// budget is the load's file budget, under its Limits as they are now.
func (l *Loader) budget() *budget {
	l.files.Limits = l.Limits
	return &l.files
}

// Path reads a file or a directory tree, as Load does. In a tree, only
// regular files are read (FIFOs, sockets and devices are skipped with a
// warning, never opened); a file named here that is not one is an error.
//
// Nothing is read through a symbolic link that leads out of the tree named
// (for a file named, out of its directory): such a file in a tree, or a
// local file a Butane config embeds, is an error naming the link.
func (l *Loader) Path(p string) {
	l.Loader.Butane = l.butane
	info, err := os.Stat(p)
	if err != nil {
		l.Fail(fileError(p, err))
		return
	}
	if !info.IsDir() {
		l.tree = filepath.Dir(p)
		l.file(osFiles{}, p, p, true)
		return
	}
	l.tree = p
	root, err := os.OpenRoot(p)
	if err != nil {
		l.Fail(fileError(p, err))
		return
	}
	defer root.Close()
	l.dir(root, p)
}

// Extensions Load reads inside directories; a file named explicitly is read
// whatever its name.
var readExts = map[string]bool{".yaml": true, ".yml": true, ".json": true, ".bu": true}

// dir walks a tree in lexical order. Hidden entries are skipped: editors'
// swap files, and the ..data links Kubernetes puts in mounted ConfigMaps,
// which would otherwise be read twice. Symbolic links are followed.
//
// Files are opened through root, so that none is read outside the tree.
func (l *Loader) dir(root *os.Root, dir string) {
	walkTree(dir, func(p string, info fs.FileInfo, err error) error {
		if p != dir && strings.HasPrefix(filepath.Base(p), ".") {
			if info != nil && info.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		read := err == nil && !info.IsDir() && readExts[strings.ToLower(filepath.Ext(p))]
		if err == nil && (read || info.IsDir()) {
			if err := outside(dir, p); err != nil {
				l.Fail(&render.Error{File: p, Message: err.Error(), Err: err})
				return fs.SkipDir // for a file, as nil: walkTree goes on
			}
		}
		switch {
		case errors.Is(err, errSymlinkLoop):
			l.skip(p, err)
		case err != nil:
			l.Fail(fileError(p, err))
		case read:
			rel, _ := filepath.Rel(dir, p)
			l.file(root, rel, p, false)
		}
		return nil
	})
}

// file reads one file, name as o opens it and p as people know it; named
// says the caller named it rather than a tree holding it, so that a file
// which cannot be read is an error, not skipped.
func (l *Loader) file(o opener, name, p string, named bool) {
	if l.files.full {
		return // reported once, on the file that reached the limit
	}
	if l.Reading != nil {
		l.Reading(p)
	}
	data, err := l.budget().readFile(o, name)
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		// os.Root's words: outside let it pass, so a link on the way is
		// absolute, or was swapped since.
		err = errAbsolute
	}
	switch {
	case errors.Is(err, errNotRegular) && !named:
		l.skip(p, err)
	case err != nil:
		l.Fail(fileError(p, err))
	default:
		l.Data(p, data)
	}
}

// skip records a file not read, with a warning naming it.
func (l *Loader) skip(p string, err error) {
	x := &render.Error{File: p, Message: "warning: " + err.Error() + "; skipped", Err: err}
	l.skipped = append(l.skipped, x)
	l.Notice(x)
}

// Skipped lists the files the load did not read, each with a warning: the
// FIFOs, sockets and devices in a tree, and directory symlink loops. It is
// set whether or not the load failed.
func (l *Loader) Skipped() []*render.Error { return l.skipped }

// butane translates a Butane config read from file, its local files
// resolving next to it, as a user running butane in that directory expects,
// once they are checked by the loader's rules (see butaneLocals).
func (l *Loader) butane(file, name string, data []byte) ([]byte, []intake.Problem, error) {
	if errs := l.budget().butaneLocals(file, l.tree, data); len(errs) > 0 {
		return nil, nil, &render.Errors{List: errs}
	}
	return intake.Butane(name, data, butanecommon.TranslateBytesOptions{
		TranslateOptions: butanecommon.TranslateOptions{FilesDir: filepath.Dir(file)},
	})
}

// fileError names the file once: an *fs.PathError repeats it.
func fileError(p string, err error) *render.Error {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return &render.Error{File: p, Message: msg, Err: err}
}
