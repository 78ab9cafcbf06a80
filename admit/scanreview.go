package admit

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// scanReview is json.Unmarshal(body, &in) for a body validJSON checks and
// whose members the review reads are found by name (members) and only
// those decoded: encoding/json checks a rendered config's hundreds of
// kilobytes a byte at a time, then passes over them again to copy the
// raw config. ok is false wherever the two could differ: a member named
// otherwise than its field but for case (encoding/json folds case, and
// Unicode's, ſ for s), a member the review reads given twice (encoding/json
// merges the two), a value of another type than its field's (it decodes
// the rest and fails). decodeReview then decodes the body as before.
// TestScanReviewIsUnmarshal and FuzzScanReview hold it to json.Unmarshal.
func scanReview(body []byte) (in reviewIn, ok bool) {
	if !validJSON(body) {
		return reviewIn{}, false
	}
	ok = fields(body, map[string]func([]byte) bool{
		"apiVersion": stringField(&in.APIVersion),
		"kind":       stringField(&in.Kind),
		"request": func(v []byte) bool {
			if isNull(v) {
				return true
			}
			in.Request = &request{}
			return requestFields(v, in.Request)
		},
	})
	return in, ok
}

func requestFields(v []byte, r *request) bool {
	return fields(v, map[string]func([]byte) bool{
		"uid":         stringField(&r.UID),
		"resource":    into(&r.Resource),
		"subResource": stringField(&r.SubResource),
		"name":        stringField(&r.Name),
		"operation":   stringField(&r.Operation),
		"userInfo": func(v []byte) bool {
			return isNull(v) || fields(v, map[string]func([]byte) bool{"username": stringField(&r.UserInfo.Username)})
		},
		"dryRun": into(&r.DryRun),
		"object": func(v []byte) bool {
			o := &r.Object
			return isNull(v) || fields(v, map[string]func([]byte) bool{
				"metadata": func(v []byte) bool {
					return isNull(v) || fields(v, map[string]func([]byte) bool{
						"name":          stringField(&o.Metadata.Name),
						"generateName":  stringField(&o.Metadata.GenerateName),
						"uid":           stringField(&o.Metadata.UID),
						"managedFields": raw(&o.Metadata.ManagedFields),
					})
				},
				"spec": func(v []byte) bool {
					return isNull(v) || fields(v, map[string]func([]byte) bool{"config": raw(&o.Spec.Config)})
				},
			})
		},
	})
}

// fields hands each member of the object obj that has a field to its
// decoder, false where obj is not an object, a member is named as a field
// but for case or given twice, or a decoder fails.
func fields(obj []byte, decoders map[string]func([]byte) bool) bool {
	ms, err := members(obj)
	if err != nil {
		return false
	}
	seen := make(map[string]bool, len(decoders))
	for _, m := range ms {
		if d, ok := decoders[m.name]; ok {
			if seen[m.name] || !d(m.value) {
				return false
			}
			seen[m.name] = true
			continue
		}
		if !asciiOnly(m.name) {
			return false
		}
		for name := range decoders {
			if strings.EqualFold(name, m.name) {
				return false
			}
		}
	}
	return true
}

// into decodes a small value into *p, as encoding/json does a field.
func into[T any](p *T) func([]byte) bool {
	return func(v []byte) bool { return json.Unmarshal(v, p) == nil }
}

// stringField decodes a string into *p, as encoding/json does a field of a
// string type, without its reflection: a review's names and kinds.
func stringField[T ~string](p *T) func([]byte) bool {
	return func(v []byte) bool {
		if isNull(v) {
			return true
		}
		if len(v) == 0 || v[0] != '"' {
			return false
		}
		s, err := stringText(v)
		*p = T(s)
		return err == nil
	}
}

// raw takes a copy of a value as it is, as encoding/json fills a
// json.RawMessage (null too): a slice of the body would keep all of it
// alive in the lowering cache, which counts only the config's bytes.
func raw(p *json.RawMessage) func([]byte) bool {
	return func(v []byte) bool {
		*p = bytes.Clone(v)
		return true
	}
}

func isNull(v []byte) bool { return bytes.Equal(v, []byte("null")) }

func asciiOnly(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
