package render

import (
	"strconv"
	"sync"

	"github.com/ignition-mcs/mcs/convert"
)

// validItems share the validation of merged and translated configs across
// a set's renders (convert.ValidItems), with the stand-ins for the large
// data URLs each MachineConfig's own validation covered. Safe for
// concurrent use; the zero value is ready.
type validItems struct {
	items  convert.ValidItems
	mu     sync.Mutex
	tokens map[string]*string // a large data URL → its short stand-in (see sourcesValidated)
}

// trim forgets the memos once one holds more than max entries.
func (v *validItems) trim(max int) {
	v.items.Forget(max)
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.tokens) > max {
		v.tokens = nil
	}
}

// token is the stand-in for a data URL validated with its MachineConfig.
func (v *validItems) token(url string) *string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t, ok := v.tokens[url]; ok {
		return t
	}
	if v.tokens == nil {
		v.tokens = map[string]*string{}
	}
	t := "data:,mcs-validated-" + strconv.Itoa(len(v.tokens))
	v.tokens[url] = &t
	return &t
}
