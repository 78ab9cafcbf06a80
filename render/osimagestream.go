package render

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/vincent-petithory/dataurl"

	"github.com/ignition-mcs/mcs/convert"
)

// The OSImageStream a release publishes: machineconfiguration.openshift.io/v1
// OSImageStream, the singleton "cluster" (upstream's
// ClusterInstanceNameOSImageStream), whose status lists the OS image
// streams (rhel-9, rhel-10 …) pools may run.
const (
	kindOSImageStream = "OSImageStream"
	osImageStreamName = "cluster"
	// osImageStreamResource is how the API server names a stream not
	// found, as upstream's error quotes it.
	osImageStreamResource = "osimagestreams.machineconfiguration.openshift.io"
)

// osImageStream is the part of the OSImageStream a render reads.
type osImageStream struct {
	defaultStream string
	streams       []osImageStreamSet
	source        string
}

// osImageStreamSet is one stream: its OS and extensions images.
type osImageStreamSet struct {
	Name              string `json:"name"`
	OSImage           string `json:"osImage"`
	OSExtensionsImage string `json:"osExtensionsImage"`
}

// streamInput is what a render reads of the streams: the pool's stream, or
// why it has none (the worker pool it inherits from, the OSImageStream).
type streamInput struct {
	Set *osImageStreamSet
	Err string
}

// OSImageStreamReference names the stream a pool runs
// (spec.osImageStream of a MachineConfigPool).
type OSImageStreamReference struct {
	Name string `json:"name,omitempty"`
}

func decodeOSImageStream(o rawObject) (*osImageStream, error) {
	var s struct {
		Status struct {
			DefaultStream    string             `json:"defaultStream"`
			AvailableStreams []osImageStreamSet `json:"availableStreams"`
		} `json:"status"`
	}
	if err := json.Unmarshal(o.JSON, &s); err != nil {
		return nil, typeError(err)
	}
	return &osImageStream{defaultStream: s.Status.DefaultStream, streams: s.Status.AvailableStreams, source: o.File}, nil
}

// The pools that never inherit the worker pool's stream (upstream's
// IsCustomPool is false for them).
var standardPools = []string{"master", "worker", "arbiter"}

// poolStream is which stream a pool runs, as upstream's render controller
// picks it (GetEffectiveOSImageStreamName, GetOSImageStreamSetByName): the
// pool's own spec.osImageStream.name; for a custom pool without one, the
// worker pool's; else the OSImageStream's status.defaultStream. nil when
// the cluster publishes no OSImageStream and the pool names none: the
// ControllerConfig's images then.
func (s *Set) poolStream(p *MachineConfigPool) (*osImageStreamSet, *Error) {
	name, from := streamName(p), p
	if name == "" && !slices.Contains(standardPools, p.Metadata.Name) {
		if w := s.Pool("worker"); w != nil {
			name, from = streamName(w), w
		}
	}
	st := s.streams
	switch {
	case st == nil && name == "":
		return nil, nil
	case st == nil:
		return nil, streamError(p, from, fmt.Sprintf("could not get OSImageStream for pool %s: %s %q not found", p.Metadata.Name, osImageStreamResource, osImageStreamName))
	}
	want := name
	if want == "" {
		want = st.defaultStream
	}
	if i := slices.IndexFunc(st.streams, func(x osImageStreamSet) bool { return x.Name == want }); i >= 0 {
		return &st.streams[i], nil
	}
	msg := fmt.Sprintf("could not get OSImageStreamSet for pool %s: %s %q not found", p.Metadata.Name, osImageStreamResource, want)
	if name == "" {
		return nil, &Error{File: st.source, Object: kindOSImageStream + "/" + osImageStreamName, Path: convert.NewPath("status", "defaultStream"), Message: msg + " (the default stream)", Err: ErrInvalid}
	}
	return nil, streamError(p, from, msg)
}

func streamName(p *MachineConfigPool) string {
	if p.Spec.OSImageStream == nil {
		return ""
	}
	return p.Spec.OSImageStream.Name
}

// streamError is a stream p cannot get, at the pool that names it: p, or
// the worker pool p inherits it from.
func streamError(p, from *MachineConfigPool, msg string) *Error {
	if from != p {
		msg += fmt.Sprintf(" (pool %s inherits pool %s's spec.osImageStream.name)", p.Metadata.Name, from.Metadata.Name)
	}
	return &Error{File: from.Source, Object: KindMachineConfigPool + "/" + from.Metadata.Name, Path: convert.NewPath("spec", "osImageStream", "name"), Message: msg, Err: ErrInvalid}
}

// isRHEL10Stream is upstream's IsRHEL10Stream: streams without runc.
func isRHEL10Stream(name string) bool { return name == "rhel-10" || name == "centos-10" }

// errRuncOnRHEL10 is upstream's refusal, word for word.
const errRuncOnRHEL10 = "MachineConfigPool %s targets a RHEL 10 OS image where runc is not available. " +
	"To unblock, migrate to crun by removing any ContainerRuntimeConfig that sets defaultRuntime to runc, " +
	"and removing any MachineConfig that sets default_runtime = \"runc\" in CRI-O configuration under /etc/crio/crio.conf.d/"

// crioDropInDir holds CRI-O's drop-ins, read in name order, the last
// default_runtime winning.
const crioDropInDir = "/etc/crio/crio.conf.d/"

// runcDropIn is the CRI-O drop-in of the merged config that leaves runc as
// the default runtime (upstream's DetectRuncInMachineConfig), "" when the
// effective runtime is another.
func runcDropIn(cfg *convert.Config) (string, error) {
	var dropIns []int
	for i, f := range cfg.Storage.Files {
		if strings.HasPrefix(f.Path, crioDropInDir) && f.Contents.Source != nil {
			dropIns = append(dropIns, i)
		}
	}
	slices.SortFunc(dropIns, func(a, b int) int { return strings.Compare(cfg.Storage.Files[a].Path, cfg.Storage.Files[b].Path) })
	effective, from := "", ""
	for _, i := range dropIns {
		f := cfg.Storage.Files[i]
		body, err := dataContents(*f.Contents.Source, f.Contents.Compression)
		if err != nil {
			return "", fmt.Errorf("decoding CRI-O drop-in %s: %w", f.Path, err)
		}
		var c struct {
			Crio struct {
				Runtime struct {
					DefaultRuntime string `toml:"default_runtime"`
				} `toml:"runtime"`
			} `toml:"crio"`
		}
		if _, err := toml.NewDecoder(bytes.NewReader(body)).Decode(&c); err != nil {
			return "", fmt.Errorf("parsing the TOML of CRI-O drop-in %s: %w", f.Path, err)
		}
		if r := c.Crio.Runtime.DefaultRuntime; r != "" {
			effective, from = r, f.Path
		}
	}
	if effective != "runc" {
		return "", nil
	}
	return from, nil
}

// dataContents decodes an inline file's contents (a data URL, gzip or not);
// a remote source is not fetched and reads as empty.
func dataContents(src string, compression *string) ([]byte, error) {
	if !strings.HasPrefix(src, "data:") {
		return nil, nil
	}
	u, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, err
	}
	if compression == nil || *compression != "gzip" {
		return u.Data, nil
	}
	z, err := gzip.NewReader(bytes.NewReader(u.Data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(z, 1<<20))
}

// checkStream applies upstream's two OSImageStream refusals to a merged
// render: an osImageURL override with spec.osImageStream.name set (the
// admin must pick one way of managing the OS), and runc left as CRI-O's
// runtime on a RHEL 10 stream. (With an override, upstream inspects the
// image's labels for its stream; mcs reads no image, so that case is not
// checked.)
func (r *renderer) checkStream(cfg *convert.Config, prov Provenance, spec *MachineConfigSpec, overridden bool) {
	pool := r.pool.Metadata.Name
	if overridden && r.pool.Spec.OSImageStream != nil && r.pool.Spec.OSImageStream.Name != "" {
		r.poolErr(convert.NewPath("spec", "osImageStream", "name"), fmt.Sprintf("cannot override MachineConfig osImageURL and set MachineConfigPool spec.osImageStream.name simultaneously (MachineConfig %s sets osImageURL %s; stream %s)",
			r.osImageURLFrom(), spec.OSImageURL, r.pool.Spec.OSImageStream.Name), ErrInvalid)
		return
	}
	if overridden || r.stream == nil || !isRHEL10Stream(r.stream.Name) {
		return
	}
	path, err := runcDropIn(cfg)
	if err != nil {
		r.poolErr(convert.NewPath(), fmt.Sprintf("failed to check runc in generated MachineConfig for pool %s: %v", pool, err), err)
		return
	}
	if path == "" {
		return
	}
	mc := prov.Files[path]
	r.errs.add(&Error{File: r.set.sourceOf(mc), Object: KindMachineConfig + "/" + mc, Path: convert.NewPath("spec", "config", "storage", "files"),
		Message: fmt.Sprintf(errRuncOnRHEL10, pool) + fmt.Sprintf(" (stream %s; %s sets default_runtime = \"runc\")", r.stream.Name, path), Err: ErrInvalid})
}

// osImageURLFrom names the last MachineConfig a user wrote that sets
// osImageURL: the one whose value the render keeps.
func (r *renderer) osImageURLFrom() string {
	from := ""
	for _, e := range r.order {
		if !e.generated && e.mc.Spec.OSImageURL != "" {
			from = e.mc.Metadata.Name
		}
	}
	return from
}

// sourceOf is where the MachineConfig was read from.
func (s *Set) sourceOf(name string) string {
	if e := s.byName[name]; e != nil {
		return e.mc.Source
	}
	return ""
}
