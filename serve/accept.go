package serve

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/serve/pipeline"
)

// want is what a client's Accept header asks for.
type want struct {
	// kind: wantDefault (no Ignition type, curl), wantSpec3 (any 3.0.0 up to
	// max), wantSpec2 (spec 2.2), or wantNone (nothing we can produce).
	kind wantKind
	max  convert.Version // for wantSpec3: the newest version the client reads
	// asked is the highest Ignition version the header names, for logs and the
	// skew gate ("Ignition that reads 3.2.0"); zero when it names none.
	asked convert.Version
	// refused, for wantNone, is the newest spec written that the header
	// names only with q=0 ("not acceptable"); zero when it names none so.
	refused convert.Version
}

type wantKind int

const (
	wantDefault wantKind = iota
	wantSpec3
	wantSpec2
	wantNone
)

// acceptCacheMax bounds the negotiation cache: real clients send a handful of
// distinct Accept headers; anything past this is negotiated every time.
const acceptCacheMax = 256

// cacheKeyMax is the longest header value the negotiation and User-Agent
// caches keep (real Ignition clients send under 200 bytes): longer ones,
// up to the 64 KiB a header may be, are worked out each time, so that each
// cache holds at most acceptCacheMax × cacheKeyMax = 128 KiB of keys
// rather than 16 MiB.
const cacheKeyMax = 512

// cacheable reports whether a cache holding n keys may keep key.
func cacheable(key string, n *atomic.Int64) bool {
	return len(key) <= cacheKeyMax && n.Load() < acceptCacheMax
}

// negotiator memoises negotiate by Accept header, up to acceptCacheMax.
type negotiator struct {
	m sync.Map // Accept header → want
	n atomic.Int64
}

func (c *negotiator) negotiate(accept string) want {
	if v, ok := c.m.Load(accept); ok {
		return v.(want)
	}
	w := negotiate(accept)
	if cacheable(accept, &c.n) {
		if _, loaded := c.m.LoadOrStore(accept, w); !loaded {
			c.n.Add(1)
		}
	}
	return w
}

// mediaRange is one parsed entry of an Accept header.
type mediaRange struct {
	typ, subtype string
	version      string // the version parameter, unquoted; "" when absent
	q            float64
	order        int
}

// parseAccept parses an Accept header (RFC 9110 §12.5.1): comma-separated
// media ranges with parameters, case-insensitive names, quoted values, q.
// Malformed entries are skipped rather than failing the whole header.
func parseAccept(h string) []mediaRange {
	var out []mediaRange
	for i, part := range splitQuoted(h, ',') {
		fields := splitQuoted(part, ';')
		mt := strings.ToLower(strings.TrimSpace(fields[0]))
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok || typ == "" || sub == "" || strings.ContainsAny(mt, " \t\"") {
			continue
		}
		mr := mediaRange{typ: typ, subtype: sub, q: 1, order: i}
		valid := true
		for _, p := range fields[1:] {
			name, val, ok := strings.Cut(p, "=")
			if !ok {
				continue
			}
			name = strings.ToLower(strings.TrimSpace(name))
			val = unquote(strings.TrimSpace(val))
			switch name {
			case "q":
				q, err := strconv.ParseFloat(val, 64)
				if err != nil || q < 0 || q > 1 {
					valid = false
				}
				mr.q = q
			case "version":
				mr.version = val
			}
		}
		if valid {
			out = append(out, mr)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].q > out[j].q })
	return out
}

func splitQuoted(s string, sep byte) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
		s = strings.ReplaceAll(s, `\"`, `"`)
		s = strings.ReplaceAll(s, `\\`, `\`)
	}
	return s
}

// negotiate decides what to serve from an Accept header. Entries are tried by
// q (ties in header order); q=0 means "not acceptable"; an entry we cannot
// produce falls through to the next one. A header with no Ignition type at
// all (curl, a browser, garbage) gets the default.
func negotiate(header string) want {
	ranges := parseAccept(header)
	w := want{kind: wantNone}
	hasIgnition := false
	for _, mr := range ranges {
		if mr.typ+"/"+mr.subtype == pipeline.IgnitionType {
			hasIgnition = true
			v, ok := ignitionVersion(mr.version)
			if ok && mr.q > 0 && w.asked.Less(v) {
				w.asked = v
			}
			if ok && mr.q <= 0 && writable(v) && w.refused.Less(v) {
				w.refused = v
			}
		}
	}
	if !hasIgnition {
		return want{kind: wantDefault}
	}
	for _, mr := range ranges {
		if mr.q <= 0 {
			continue
		}
		switch mt := mr.typ + "/" + mr.subtype; {
		case mt == pipeline.IgnitionType && mr.version == "":
			w.kind = wantDefault
			return w
		case mt == pipeline.IgnitionType:
			v, ok := ignitionVersion(mr.version)
			if !ok {
				continue
			}
			switch {
			case v.Major == 3:
				w.kind, w.max = wantSpec3, v
				return w
			case v.Major == 2 && v.Minor >= 2:
				w.kind = wantSpec2
				return w
			}
			// 1.x, 2.0, 2.1 and 4+: we write none of these; try the next entry.
		case mt == "*/*" || mt == "application/*" || mt == "application/json":
			w.kind = wantDefault
			return w
		}
	}
	return w
}

// writable reports whether a spec a header names is one mcs answers with
// (3.x, or 2.2+ served as 2.2).
func writable(v convert.Version) bool { return v.Major == 3 || v.Major == 2 && v.Minor >= 2 }

// ignitionVersion reads a version parameter: "3.4.0", and also "3.4" (which
// the MCO silently served as 2.2).
func ignitionVersion(s string) (convert.Version, bool) {
	if strings.Count(s, ".") == 1 {
		s += ".0"
	}
	v, err := convert.ParseVersion(s)
	return v, err == nil
}
