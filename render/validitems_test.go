package render

import (
	"path/filepath"
	"testing"

	"github.com/coreos/ignition/v2/config/validate"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/shareddata"
)

// A set's validItems pass every real merge, as Ignition's validation of the
// whole does, without the whole walk (convert's TestValidItemsAgree has the
// configs that fail).
func TestValidItemsAgree(t *testing.T) {
	var v validItems // shared, as a set's renders share it
	agree := func(name string, cfg convert.Config, want bool) {
		t.Helper()
		cfg = v.sourcesValidated(cfg)
		whole := !validate.ValidateWithContext(cfg, nil).IsFatal()
		if got := v.items.Passes(cfg); got != whole || whole != want {
			t.Errorf("%s: passes %v, whole validation passes %v, want %v", name, got, whole, want)
		}
	}
	dirs := []string{filepath.Join("..", "fixtures", "cluster")}
	if d, ok := shareddata.Optional(t, "realdata", "aws"); ok {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, pool := range s.PoolNames() {
			j, err := s.Job(pool, Options{})
			if err != nil {
				t.Fatal(err)
			}
			agree(dir+" "+pool, mergeIgnition(j.r.order, &s.merges).cfg, true)
		}
	}
}
