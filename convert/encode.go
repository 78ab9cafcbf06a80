package convert

import (
	"errors"
	"slices"

	// clarketm/json omits empty structs tagged omitempty, as Butane and the
	// MCO write Ignition; encoding/json would emit "storage":{} and so on.
	json "github.com/clarketm/json"
)

// Marshal writes a typed config (Config, or what translate returns) as JSON:
// compact by default, indented when pretty. Same input, same bytes.
func Marshal(typed any, pretty bool) ([]byte, error) {
	if pretty {
		return json.MarshalIndent(typed, "", "  ")
	}
	return json.Marshal(typed)
}

// Encode translates cfg to spec target and marshals it.
func Encode(cfg *Config, target Version, pretty bool) ([]byte, error) {
	_, reasons := minVersion(cfg)
	return encode(cfg, target, reasons, nil, nil, pretty)
}

// encode is Encode given what MinVersion found for cfg, with directory
// modes as written (see WrittenModes), validating with valid (may be nil).
func encode(cfg *Config, target Version, reasons []Reason, written WrittenModes, valid *ValidItems, pretty bool) ([]byte, error) {
	typed, err := translate(cfg, target, reasons, written, valid)
	if err != nil {
		return nil, err
	}
	return Marshal(typed, pretty)
}

// Encoder writes one config, whose contents were validated already (by
// Parse, or a render's validation of its merge), at any output spec: the
// bytes of Encode, faster. It finds what the config needs once, and holds
// its large inline contents out of translation and encoding: translating
// validates, and Ignition's validation decodes every data URL; writing JSON
// (or YAML) scans every byte. Each large data URL is swapped for a short
// token, and the original is put back in the bytes written; no spec version
// changes a data URL, so they are the bytes of encoding the config itself.
type Encoder struct {
	cfg, swapped Config
	reasons      []Reason
	need         Version
	ph           *placeholders
	written      WrittenModes
	valid        *ValidItems
	judged       bool // see Judged
}

// NewEncoder prepares cfg; it is not changed. With forYAML, only contents
// YAML writes as they are in JSON are held out, so that Encoded.YAML can put
// them back too.
func NewEncoder(cfg Config, forYAML bool) *Encoder {
	ph := newPlaceholders(forYAML)
	e := &Encoder{cfg: cfg, swapped: ph.swap(cfg), ph: ph}
	// A token is a data URL as the original is, so the needs are the same.
	e.need, e.reasons = minVersion(&e.swapped)
	return e
}

// Written has the encoder write directories' modes as the config's inputs
// wrote them (see WrittenModes) at specs before 3.6. Call it before Encode.
func (e *Encoder) Written(w WrittenModes) *Encoder {
	e.written = w
	return e
}

// Validating has the encoder validate what it translates through v, which
// other encoders may share (see ValidItems). Call it before Encode.
func (e *Encoder) Validating(v *ValidItems) *Encoder {
	e.valid = v
	return e
}

// Judged has Encode write without its own validation and proof, for a
// caller that judges every result with a Judge before using it
// (Judge.Losses): the readers' own parsers validate it as Ignition does,
// and what they read of it must be what they read of the original, which
// is what the proof by convert's own steps stands in for. Call it before
// Encode.
func (e *Encoder) Judged() *Encoder {
	e.judged = true
	return e
}

// Check validates the config by spec v's rules, as a reader of v sees it
// (translated to v): valid at the spec it declared, it may not be at a newer
// one (3.1 requires a merged config's source, 3.3 a link's target), and a
// reader that translates every config up to its own spec and validates it
// there (OpenShift's machine-config-operator) refuses it. v is at least
// MinVersion's. The error is an *InvalidError whose problems say so, or a
// *CannotExpressError.
func (e *Encoder) Check(v, declared Version) error {
	_, _, err := down(&e.swapped, v, e.reasons, e.written, e.valid)
	var ie *InvalidError
	if errors.As(err, &ie) && declared != v {
		return &InvalidError{Version: v, Problems: validOnlyIn(slices.Clone(ie.Problems), declared, v)}
	}
	return err
}

// MinVersion is MinVersion of the config.
func (e *Encoder) MinVersion() (Version, []Reason) { return e.need, e.reasons }

// Encoded is a config an Encoder wrote.
type Encoded struct {
	JSON   []byte // compact, as Encode writes it
	tokens []byte // JSON with tokens for the large contents; nil when none
	ph     *placeholders
}

// Encode writes the config at spec v as compact JSON. edit, when not nil,
// first changes a shallow copy of the config (a slice must be copied before
// its elements change), whose needs are then found anew. Safe for
// concurrent use.
func (e *Encoder) Encode(v Version, edit func(*Config) error) (*Encoded, error) {
	tokens, err := e.tokens(v, edit)
	if err != nil {
		return nil, err
	}
	if len(e.ph.orig) == 0 {
		return &Encoded{JSON: tokens}, nil
	}
	if js, _ := e.ph.restoreJSON(tokens); !e.ph.leftover(js) {
		return &Encoded{JSON: js, tokens: tokens, ph: e.ph}, nil
	}
	// A token went missing, which translation cannot do: a node must still
	// never get one, so the config is written the slow way.
	cfg, reasons, err := e.edited(e.cfg, edit)
	if err != nil {
		return nil, err
	}
	js, err := e.encode(&cfg, v, reasons)
	return &Encoded{JSON: js}, err
}

// tokens is the config, edited, at spec v, with tokens for the large
// contents held out.
func (e *Encoder) tokens(v Version, edit func(*Config) error) ([]byte, error) {
	cfg, reasons, err := e.edited(e.swapped, edit)
	if err != nil {
		return nil, err
	}
	return e.encode(&cfg, v, reasons)
}

// encode is encode, or without the checks for a judged encoder.
func (e *Encoder) encode(cfg *Config, v Version, reasons []Reason) ([]byte, error) {
	if !e.judged {
		return encode(cfg, v, reasons, e.written, e.valid, false)
	}
	_, out, err := downUnvalidated(cfg, v, reasons, e.written)
	if err != nil {
		return nil, err
	}
	return Marshal(out, false)
}

func (e *Encoder) edited(cfg Config, edit func(*Config) error) (Config, []Reason, error) {
	if edit == nil {
		return cfg, e.reasons, nil
	}
	if err := edit(&cfg); err != nil {
		return cfg, nil, err
	}
	_, reasons := minVersion(&cfg)
	return cfg, reasons, nil
}

// Restorer puts the large contents an Encoder held out back into bytes
// written from parts of its JSON with tokens (see Encoded.YAML). The zero
// value, given bytes without tokens, returns them as they are.
type Restorer struct{ ph *placeholders }

// JSON puts the contents back into JSON bytes (a part of the config's JSON
// with tokens): the same part of the config's JSON.
func (r Restorer) JSON(b []byte) []byte {
	if r.ph == nil {
		return b
	}
	out, _ := r.ph.restoreJSON(b)
	return out
}

// YAML puts the contents back into YAML written from such a part, where
// each stands as a plain scalar ending its line.
func (r Restorer) YAML(b []byte) []byte {
	if r.ph == nil {
		return b
	}
	out, _ := r.ph.restoreYAML(b)
	return out
}

// YAML returns a YAML document that write builds around the config's JSON,
// given x.JSON and the zero Restorer. Where the Encoder was made forYAML,
// write is given the JSON with tokens and the Restorer that puts the
// contents back, which it uses on what it wrote: the same bytes, without
// writing large contents through a YAML writer. Any token left over, or an
// error, has it write from x.JSON instead.
func (x *Encoded) YAML(write func(config []byte, r Restorer) ([]byte, error)) ([]byte, error) {
	if x.tokens == nil || !x.ph.plainOnly {
		return write(x.JSON, Restorer{})
	}
	y, err := write(x.tokens, Restorer{x.ph})
	if err != nil || x.ph.leftover(y) {
		return write(x.JSON, Restorer{}) // as Encode: the slow way is still right
	}
	return y, nil
}
