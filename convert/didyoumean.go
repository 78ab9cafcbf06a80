package convert

import (
	"reflect"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/internal/text"
)

// keySuggestion is the key of the newest spec an unknown key at path is a
// typo of ("" when none is near): the keys offered are those of the object
// holding it, read from Ignition's own types so they never drift from the
// spec.
func keySuggestion(path []any) string {
	return text.KeyTypo(reflect.TypeOf(types.Config{}), "json", path)
}
