package tree

import (
	"errors"
	"testing"

	"github.com/ignition-mcs/mcs/internal/mctest"
	"github.com/ignition-mcs/mcs/render"
)

func loadErrs(t *testing.T, paths ...string) []*render.Error {
	t.Helper()
	_, err := Load(paths...)
	var es *render.Errors
	if !errors.As(err, &es) {
		t.Fatalf("Load error %v, want *render.Errors", err)
	}
	return es.List
}

// doc is a MachineConfig document for role, its one file holding content.
func doc(name, role, content string) string { return mctest.MachineConfig(name, role, content) }

// noMemo remembers nothing: every walk through it reads every file.
var noMemo *Memo
