package convert

import (
	// clarketm/json omits empty structs tagged omitempty, as Butane and the
	// MCO write Ignition; encoding/json would emit "storage":{} and so on.
	json "github.com/clarketm/json"
)

// Marshal writes a typed config (Config, or what Translate returns) as JSON:
// compact by default, indented when pretty. Same input, same bytes.
func Marshal(typed any, pretty bool) ([]byte, error) {
	if pretty {
		return json.MarshalIndent(typed, "", "  ")
	}
	return json.Marshal(typed)
}

// Encode translates cfg to spec target and marshals it.
func Encode(cfg *Config, target Version, pretty bool) ([]byte, error) {
	typed, err := Translate(cfg, target)
	if err != nil {
		return nil, err
	}
	return Marshal(typed, pretty)
}
