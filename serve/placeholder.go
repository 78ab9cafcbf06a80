package serve

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/convert"
)

// placeholders stand in for inline file contents while a config is encoded
// at each spec version. Encoding validates the result, and Ignition's
// validation decodes every data URL: for a pool of ~200 KB of contents, served
// at eight versions, that decoding was most of a render. The contents were
// validated when the pool was rendered (and the node files are ours), and no
// spec version changes a data URL, so each is swapped for a short unique
// token before encoding and swapped back, JSON-encoded, in the output bytes.
type placeholders struct {
	prefix string
	orig   [][]byte // JSON-encoded originals, by index
}

// minPlaceholder is the size below which a source is left in place: the
// swap would cost more than decoding it.
const minPlaceholder = 512

// swap returns a copy of cfg whose large data URLs are tokens; cfg is not
// changed.
func (p *placeholders) swap(cfg convert.Config) (convert.Config, error) {
	files, err := p.swapFiles(cfg.Storage.Files)
	cfg.Storage.Files = files
	return cfg, err
}

// swapFiles returns a copy of files with large data URLs swapped.
func (p *placeholders) swapFiles(in []types.File) ([]types.File, error) {
	files := slices.Clone(in)
	for i := range files {
		f := &files[i]
		if err := p.swapResource(&f.Contents); err != nil {
			return nil, err
		}
		if len(f.Append) > 0 {
			f.Append = slices.Clone(f.Append)
			for j := range f.Append {
				if err := p.swapResource(&f.Append[j]); err != nil {
					return nil, err
				}
			}
		}
	}
	return files, nil
}

func (p *placeholders) swapResource(r *types.Resource) error {
	if r.Source == nil || len(*r.Source) < minPlaceholder || !bytes.HasPrefix([]byte(*r.Source), []byte("data:")) {
		return nil
	}
	tok := fmt.Sprintf("data:,%s-%d", p.prefix, len(p.orig))
	o, err := convert.Marshal(*r.Source, false)
	if err != nil {
		return err
	}
	p.orig = append(p.orig, o)
	r.Source = &tok
	return nil
}

// restore puts the originals back into an encoded config, in one pass
// that finds tokens wherever they are (a node file that replaces a pool file
// of the same path takes that file's place, out of token order).
func (p *placeholders) restore(body []byte) []byte {
	if len(p.orig) == 0 || body == nil {
		return body
	}
	lead := []byte(`"data:,` + p.prefix + "-")
	var out []byte
	rest := body
	for {
		at := bytes.Index(rest, lead)
		if at < 0 {
			break
		}
		n, width := 0, 0
		for at+len(lead)+width < len(rest) && rest[at+len(lead)+width] >= '0' && rest[at+len(lead)+width] <= '9' {
			n = n*10 + int(rest[at+len(lead)+width]-'0')
			width++
		}
		end := at + len(lead) + width
		if width == 0 || n >= len(p.orig) || end >= len(rest) || rest[end] != '"' {
			// Not one of ours after all: copy past the lead and go on.
			out = append(out, rest[:at+len(lead)]...)
			rest = rest[at+len(lead):]
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(body)+p.size())
		}
		out = append(out, rest[:at]...)
		out = append(out, p.orig[n]...)
		rest = rest[end+1:]
	}
	if out == nil {
		return body
	}
	return append(out, rest...)
}

func (p *placeholders) size() int {
	n := 0
	for _, o := range p.orig {
		n += len(o)
	}
	return n
}
