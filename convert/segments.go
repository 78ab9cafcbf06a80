package convert

import "bytes"

// EncodeSegments writes the config at spec v as Encode does, as pieces
// whose concatenation is Encode's JSON, without joining them: the pieces at
// odd indices are the large contents the Encoder held out, each the same
// slice in every call, so a caller that keeps many versions of the config
// (or many configs sharing contents) can keep one copy of each. Safe for
// concurrent use; the pieces must not be changed.
func (e *Encoder) EncodeSegments(v Version, edit func(*Config) error) ([][]byte, error) {
	tokens, err := e.tokens(v, edit)
	if err != nil {
		return nil, err
	}
	if len(e.ph.orig) == 0 {
		return [][]byte{tokens}, nil
	}
	js := e.ph.jsonAll()
	text, found := splitTokens(tokens, []byte(`"`+e.ph.lead), '"', len(js))
	segs := make([][]byte, 0, 2*len(found)+1)
	leftover := false
	for i, t := range text {
		leftover = leftover || bytes.Contains(t, []byte(e.ph.lead))
		segs = append(segs, t)
		if i < len(found) {
			segs = append(segs, js[found[i]])
		}
	}
	if !leftover {
		return segs, nil
	}
	// As Encode: a token a node would get means the slow way.
	out, err := e.Encode(v, edit)
	if err != nil {
		return nil, err
	}
	return [][]byte{out.JSON}, nil
}

// ShareContents makes the Encoder hold each large content it holds out, as
// written in JSON (the odd pieces of EncodeSegments), as intern returns it:
// a caller that keeps those bytes anyway (interned, shared between configs)
// then holds no second copy for as long as it keeps the Encoder. intern
// must return equal bytes. Call it before the Encoder is first used.
func (e *Encoder) ShareContents(intern func([]byte) []byte) *Encoder {
	js := e.ph.jsonAll()
	for i := range js {
		js[i] = intern(js[i])
	}
	return e
}
