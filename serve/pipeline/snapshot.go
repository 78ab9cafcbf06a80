package pipeline

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/convert"
	"github.com/ignition-mcs/mcs/internal/fanout"
	"github.com/ignition-mcs/mcs/render"
	"github.com/ignition-mcs/mcs/serve/fetchlog"
)

// Snapshot is one complete, immutable generation of everything served. It is
// built off the request path and swapped in atomically; handlers only read it.
type Snapshot struct {
	Generation uint64
	Built      time.Time
	BuildTime  time.Duration
	pools      map[string]*Pool
	names      []string          // sorted
	failed     map[string]string // pool → why its newest render failed (it serves an older one)
	// Rerendered and Carried count the pools whose responses this snapshot
	// encoded and those it carried over from the one before.
	Rerendered, Carried int
}

// Pool is the pool named name, or nil when the snapshot serves none.
func (s *Snapshot) Pool(name string) *Pool { return s.pools[name] }

// Names are the pools served, sorted; the caller must not modify them.
func (s *Snapshot) Names() []string { return s.names }

// Failed is why the newest render of the pool named name failed, when it
// did (the snapshot then serves an older render of it, if any).
func (s *Snapshot) Failed(name string) (string, bool) {
	why, ok := s.failed[name]
	return why, ok
}

// AllRendered reports whether every pool's newest render succeeded.
func (s *Snapshot) AllRendered() bool { return len(s.failed) == 0 }

// keepFailed carries over, from prev, the pools whose newest render failed.
// A pool that never rendered stays absent (404 names it nowhere). A kept
// pool is re-encoded when the node files changed (a rotated kubeconfig or
// CA): its last good render must not hand new nodes stale credentials.
func (s *Snapshot) keepFailed(prev *Snapshot, failed map[string]error, cc *render.ControllerConfig, nf render.NodeFiles) {
	if len(failed) == 0 {
		return
	}
	s.failed = make(map[string]string, len(failed))
	node := nf.Key(cc)
	for name, err := range failed {
		s.failed[name] = err.Error()
		if prev == nil || prev.pools[name] == nil || s.pools[name] != nil {
			continue
		}
		p := prev.pools[name]
		if p.node != node {
			if q, err := buildPool(p.result, cc, nf); err == nil {
				q.node, p = node, q
			}
		}
		s.pools[name] = p
		s.names = append(s.names, name)
	}
	slices.Sort(s.names)
}

// Pool holds one pool's precomputed responses, one per spec version that can
// express its config, and why the others cannot.
type Pool struct {
	name   string
	result *render.Result
	// specs hold the responses, by index in convert.OutputVersions (see
	// Response); build is what the ones not encoded yet need.
	specs []specSlot
	build atomic.Pointer[encoding]
	// Fetches records who fetched this rendered config; attached by
	// whoever serves the snapshot, before it is served.
	Fetches atomic.Pointer[fetchlog.Rendered]
	node    render.Key // the key of the node files encoded with the result
}

// Name is the pool's name.
func (p *Pool) Name() string { return p.name }

// Result is the render the pool serves.
func (p *Pool) Result() *render.Result { return p.result }

// Response is a served body with every header precomputed, as the header
// map's value slices, so the request path allocates none of them.
type Response struct {
	Version      convert.Version
	VersionLabel string
	ContentType  []string
	Form                  // the body as encoded
	gz           lazyForm // gzipped, made on first use (see Gzipped)
	indented     lazyForm // indented (?pretty=1), made on first use
}

// Form is one form of a response's body with the header values that go
// with it.
type Form struct {
	Body     *Body
	ETag     []string
	Length   []string // Content-Length
	Encoding []string // Content-Encoding; nil for identity
}

// lazyForm is a form made once, on first use.
type lazyForm struct {
	once sync.Once
	form *Form
}

// variant is b, another form of r's body, with its length and an ETag of
// its own: r's with suffix.
func (r *Response) variant(b []byte, suffix string, encoding []string) *Form {
	return &Form{Body: BytesBody(b), ETag: []string{strings.TrimSuffix(r.ETag[0], `"`) + suffix + `"`},
		Length: []string{strconv.Itoa(len(b))}, Encoding: encoding}
}

// Gzipped is the gzip form, made on first use: Ignition asks for identity,
// so most snapshots never need it, and compressing every version of every
// pool would triple the render time. Should compression fail, the body is
// served as encoded: what the client asked for is the content, not gzip.
func (r *Response) Gzipped() *Form {
	r.gz.once.Do(func() {
		var gz bytes.Buffer
		zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		for _, p := range r.Body.pieces { // the compressor buffers them
			if err == nil {
				_, err = zw.Write(p)
			}
		}
		if err == nil {
			err = zw.Close()
		}
		r.gz.form = &r.Form
		if err == nil {
			r.gz.form = r.variant(gz.Bytes(), "-gz", gzipEncoding)
		}
	})
	return r.gz.form
}

// Pretty is the indented form (?pretty=1), made once: indenting on every
// request cost 25 times a plain one's CPU, which anyone could multiply.
func (r *Response) Pretty() *Form {
	r.indented.once.Do(func() {
		var buf bytes.Buffer
		if err := json.Indent(&buf, r.Body.Bytes(), "", "  "); err != nil {
			buf.Reset() // not JSON (no encoder writes that): served as it is
			r.Body.Send(&buf)
		}
		buf.WriteByte('\n')
		r.indented.form = r.variant(buf.Bytes(), "-pretty", nil)
	})
	return r.indented.form
}

// IgnitionType is the media type of an Ignition config.
const IgnitionType = "application/vnd.coreos.ignition+json"

// gzipEncoding is the Content-Encoding of gzipped forms; net/http does not
// modify it.
var gzipEncoding = []string{"gzip"}

// pathEncapsulated is where OpenShift's server puts the encapsulated
// MachineConfig, whose spec version is the served one's.
const pathEncapsulated = "/etc/ignition-machine-config-encapsulated.json"

// BuildSnapshot precomputes every response of every pool, pools and spec
// versions in parallel. It fails only on errors that would make a pool
// unservable to every client.
func BuildSnapshot(gen uint64, results []*render.Result, cc *render.ControllerConfig, nf render.NodeFiles) (*Snapshot, error) {
	return BuildSnapshotFrom(nil, gen, results, cc, nf)
}

// BuildSnapshotFrom is BuildSnapshot that carries over from prev, unchanged
// (the same bytes and ETags), the responses of every pool whose result has
// the key of the one prev served and whose node files' key is unchanged;
// only the others are encoded.
func BuildSnapshotFrom(prev *Snapshot, gen uint64, results []*render.Result, cc *render.ControllerConfig, nf render.NodeFiles) (*Snapshot, error) {
	start := time.Now()
	s := &Snapshot{Generation: gen, Built: start, pools: make(map[string]*Pool, len(results))}
	node := nf.Key(cc)
	pools := make([]*Pool, len(results))
	errs := make([]error, len(results))
	var todo []int
	for i, res := range results {
		if p := prev.carry(res, node); p != nil {
			pools[i] = p
			s.Carried++
			continue
		}
		todo = append(todo, i)
	}
	s.Rerendered = len(todo)
	fanout.Each(len(todo), func(j int) {
		i := todo[j]
		pools[i], errs[i] = buildPool(results[i], cc, nf)
		if pools[i] != nil {
			pools[i].node = node
		}
	})
	for i, res := range results {
		if errs[i] != nil {
			return nil, fmt.Errorf("pool %s: %w", res.Pool, errs[i])
		}
		s.pools[res.Pool] = pools[i]
		s.names = append(s.names, res.Pool)
	}
	slices.Sort(s.names)
	s.BuildTime = time.Since(start)
	return s, nil
}

func buildPool(res *render.Result, cc *render.ControllerConfig, nf render.NodeFiles) (*Pool, error) {
	shared, err := nf.Files(res, cc)
	if err != nil {
		return nil, err
	}
	p := &Pool{name: res.Pool, result: res, specs: make([]specSlot, len(convert.OutputVersions))}
	// The render validated the pool's contents and the node files are ours,
	// so the large ones are held out of every version's translation (see
	// convert.Encoder), and what the config needs is found once. Directory
	// modes are written as the render wrote them.
	e := &encoding{res: res}
	e.enc = convert.NewEncoder(withNodeFiles(res.Config, shared), false).Written(res.WrittenModes).ShareContents(e.contents.share)
	e.left.Store(int32(len(p.specs)))
	p.build.Store(e)
	if p.Response(res.Spec) == nil {
		return nil, fmt.Errorf("cannot serve the rendered spec %s: %w", res.Spec, p.Blocked(res.Spec))
	}
	return p, nil
}

// newResponse is b served at v; sum is its bytes' SHA-256.
func newResponse(v convert.Version, b *Body, sum [sha256.Size]byte) *Response {
	tag := hex.EncodeToString(sum[:16])
	return &Response{
		Version:      v,
		VersionLabel: v.String(),
		ContentType:  []string{IgnitionType + ";version=" + v.String()},
		Form:         Form{Body: b, ETag: []string{`"` + tag + `"`}, Length: []string{strconv.Itoa(b.size)}},
	}
}

// withNodeFiles is the pool's config with the node files upstream's server
// adds, in its order; cfg is not changed.
func withNodeFiles(cfg convert.Config, files []types.File) convert.Config {
	cfg.Storage.Files = slices.Clone(cfg.Storage.Files)
	for _, f := range files {
		putFile(&cfg, f)
	}
	return cfg
}

// servedConfig turns cfg (withNodeFiles, possibly with large contents held
// out) into the config a node of spec v receives: the encapsulated
// MachineConfig goes last. Nothing shared is modified (upstream appends
// kernel arguments to its cached object on every old-client request).
func servedConfig(cfg *convert.Config, res *render.Result, v convert.Version) error {
	cfg.Storage.Files = slices.Clone(cfg.Storage.Files)
	mc := *res.MachineConfig
	mc.Spec.KernelArguments = slices.Clone(mc.Spec.KernelArguments)

	// Spec < 3.3 cannot carry kernelArguments; the node's first-boot service
	// applies the encapsulated MachineConfig's arguments instead.
	// shouldNotExist has no such route and stays, so Encode refuses it.
	if v.Less(convert.V3_3) && len(cfg.KernelArguments.ShouldExist) > 0 {
		for _, a := range cfg.KernelArguments.ShouldExist {
			mc.Spec.KernelArguments = append(mc.Spec.KernelArguments, string(a))
		}
		cfg.KernelArguments.ShouldExist = nil
	}
	mc.Spec.Config = json.RawMessage(`{"ignition":{"version":"` + v.String() + `"}}`)
	encapsulated, err := json.Marshal(&mc)
	if err != nil {
		return fmt.Errorf("encoding encapsulated MachineConfig: %w", err)
	}
	putFile(cfg, convert.DataFile(pathEncapsulated, encapsulated))
	return nil
}

// putFile adds a file, or replaces the pool's file at the same path.
func putFile(cfg *convert.Config, f types.File) {
	for i := range cfg.Storage.Files {
		if cfg.Storage.Files[i].Path == f.Path {
			cfg.Storage.Files[i] = f
			return
		}
	}
	cfg.Storage.Files = append(cfg.Storage.Files, f)
}
