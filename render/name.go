package render

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ignition-mcs/mcs/convert"
	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// salt is upstream's: 80 random bytes that prefix what is hashed. Changing it
// would change every rendered name.
var salt = []byte{
	16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110,
	25, 93, 47, 253, 172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52,
	219, 131, 12, 206, 218, 141, 116, 135, 188, 181, 192, 151, 233, 62, 126, 165,
	64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227, 133, 188, 238, 26,
	33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
}

// hashedSpec is upstream's MachineConfigSpec exactly as its API serialises
// it: every field, none omitted, with the config and lists given as the
// YAML writer is to see them. The hash is over its YAML, so a key added
// here, or a renamed one, changes every name.
func hashedSpec(spec MachineConfigSpec, config, kernelArguments, extensions any) map[string]any {
	return map[string]any{
		"osImageURL":                     spec.OSImageURL,
		"baseOSExtensionsContainerImage": spec.BaseOSExtensionsContainerImage,
		"config":                         config,
		"kernelArguments":                kernelArguments,
		"extensions":                     extensions,
		"fips":                           spec.FIPS,
		"kernelType":                     spec.KernelType,
	}
}

// hashedName is upstream's rendered name: "rendered-<pool>-" and the hex MD5
// of the salt followed by the YAML (sigs.k8s.io/yaml: JSON with sorted keys,
// as YAML) of the spec. The same spec bytes give OpenShift's name. Given
// the encoder's output whose JSON is spec.Config (or nil), the YAML is
// written from that (see convert.Encoded.YAML), byte for byte the same;
// given items, each list item is written once per set (see yamlItems).
func hashedName(pool string, spec MachineConfigSpec, enc *convert.Encoded, items *yamlItems) (string, error) {
	write := func(cfg []byte, r convert.Restorer) ([]byte, error) {
		s := spec
		s.Config = cfg
		return items.specYAML(s, r)
	}
	var y []byte
	var err error
	if enc != nil {
		y, err = enc.YAML(write)
	} else {
		y, err = write(spec.Config, convert.Restorer{})
	}
	if err != nil {
		return "", fmt.Errorf("hashing the rendered spec: %w", err)
	}
	h := md5.New()
	h.Write(salt)
	h.Write(y)
	return "rendered-" + pool + "-" + hex.EncodeToString(h.Sum(nil)), nil
}

// specYAML is sigs.k8s.io/yaml.Marshal of upstream's spec, without its
// detour through a YAML parser: that library writes the value as JSON,
// parses the JSON as YAML and writes the tree as YAML; here the tree is
// built straight from the JSON (numbers typed as the YAML parser types
// them) and given to the same YAML writer. The slow path remains for the
// numbers whose typing could differ, and tests prove both agree.
func specYAML(spec MachineConfigSpec) ([]byte, error) {
	if !specReadable(spec) {
		return slowSpecYAML(spec)
	}
	cfg, ok, err := yamlTree(spec.Config)
	if err != nil {
		return nil, err
	}
	if !ok {
		return slowSpecYAML(spec)
	}
	return goyaml.Marshal(hashedSpec(spec, cfg, stringsTree(spec.KernelArguments), stringsTree(spec.Extensions)))
}

// specReadable: text the library's YAML reader refuses (invalid UTF-8, DEL
// and other characters YAML does not allow) takes the slow path, to fail or
// be written exactly as the library does.
func specReadable(spec MachineConfigSpec) bool {
	return yamlReadable(string(spec.Config)) && yamlReadable(spec.OSImageURL) && yamlReadable(spec.BaseOSExtensionsContainerImage) &&
		yamlReadable(spec.KernelType) && allYAMLReadable(spec.KernelArguments) && allYAMLReadable(spec.Extensions)
}

// yamlReadable reports whether s is valid UTF-8 made only of characters a
// YAML 1.1 reader accepts (goyaml's is_printable), control characters other
// than tab and line breaks excepted: the JSON encoder escapes those.
func yamlReadable(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return false
		}
		switch {
		case r == 0x85, r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		i += n
	}
	return true
}

func allYAMLReadable(ss []string) bool {
	for _, s := range ss {
		if !yamlReadable(s) {
			return false
		}
	}
	return true
}

func slowSpecYAML(spec MachineConfigSpec) ([]byte, error) {
	var cfg any = spec.Config
	if len(spec.Config) == 0 {
		cfg = json.RawMessage("null")
	}
	return yaml.Marshal(hashedSpec(spec, cfg, spec.KernelArguments, spec.Extensions))
}

// stringsTree is a string list as JSON decoding gives it: a nil list is
// null, which YAML writes as null, not as [].
func stringsTree(s []string) any {
	if s == nil {
		return nil
	}
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// yamlTree decodes JSON into the tree the YAML parser would have built from
// it. ok is false when a number is not a plain integer that fits an int:
// only the YAML parser itself says for sure how it types those.
func yamlTree(js []byte) (any, bool, error) {
	if len(js) == 0 {
		return nil, true, nil
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, fmt.Errorf("invalid JSON: data after the config")
	}
	ok := retypeNumbers(&v)
	return v, ok, nil
}

func retypeNumbers(v *any) bool {
	switch x := (*v).(type) {
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return false
		}
		n, err := strconv.ParseInt(s, 10, 0)
		if err != nil {
			return false
		}
		*v = int(n)
	case map[string]any:
		for k, e := range x {
			if !retypeNumbers(&e) {
				return false
			}
			x[k] = e
		}
	case []any:
		for i := range x {
			if !retypeNumbers(&x[i]) {
				return false
			}
		}
	}
	return true
}
