// Package render loads MachineConfigs and pools, merges each pool's configs as OpenShift's renderer does, and writes the result at the lowest spec that can express it.
package render

import (
	"encoding/json"

	"github.com/ignition-mcs/mcs/convert"
)

// ObjectMeta is the metadata every object of the tree carries.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`

	// Extra holds the fields this package does not model (uid,
	// ownerReferences, ...), written back unchanged.
	Extra map[string]json.RawMessage `json:"-"`
}

// MachineConfig is machineconfiguration.openshift.io/v1 MachineConfig.
// Unknown fields (top level, metadata and spec) are kept and written back.
type MachineConfig struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Spec       MachineConfigSpec `json:"spec"`

	// Source is where the object was read from ("dir/99-worker-ssh.yaml",
	// "dir/x.bu", "kubernetes"); not serialised.
	Source string `json:"-"`
	// Locals maps what a Butane config filled from local files ("files
	// /etc/motd", as render diff names it) to the file's path (the Butane
	// file's directory joined with the name it gives); nil for any other
	// source. Not serialised.
	Locals map[string]string `json:"-"`

	// Extra holds top-level fields this package does not model (status, ...).
	Extra map[string]json.RawMessage `json:"-"`
}

// MachineConfigSpec is the spec of a MachineConfig. Config holds the raw
// Ignition JSON exactly as written (any supported spec, or empty).
type MachineConfigSpec struct {
	OSImageURL                     string          `json:"osImageURL,omitempty"`
	BaseOSExtensionsContainerImage string          `json:"baseOSExtensionsContainerImage,omitempty"`
	Config                         json.RawMessage `json:"config"`
	KernelArguments                []string        `json:"kernelArguments"`
	Extensions                     []string        `json:"extensions"`
	FIPS                           bool            `json:"fips"`
	KernelType                     string          `json:"kernelType"`

	// Extra holds spec fields a newer API added; kept so that an older
	// reader never drops or rejects them.
	Extra map[string]json.RawMessage `json:"-"`
}

// Result is one pool's render.
type Result struct {
	Pool string
	// Key identifies everything the render read: results with the same key
	// are the same (see Key).
	Key Key
	// Name is rendered-<pool>-<hash>, hashed exactly as OpenShift does over the
	// spec written at Spec.
	Name string
	// MachineConfig is the rendered object; its Spec.Config is Config written at Spec.
	MachineConfig *MachineConfig
	// Config is the merged Ignition config in convert's internal (newest) form;
	// the server translates it per client.
	Config convert.Config
	// WrittenModes are directory modes with special bits that Config holds
	// masked, as its inputs (specs before 3.6) wrote them; encoders of
	// Config are given them (convert.Encoder.Written), as the render's is.
	WrittenModes convert.WrittenModes
	// Spec is the spec the rendered config is written at.
	Spec convert.Version
	// MinSpec is the lowest spec able to express Config (before --min-spec);
	// Reasons say, field by field, why, and which MachineConfig supplied it.
	MinSpec convert.Version
	Reasons []Reason
	// Provenance maps each file path, unit name, user name and kernel argument
	// of the result to the MachineConfig that supplied it.
	Provenance Provenance

	// MachineConfigs names the pool's MachineConfigs in merge order.
	MachineConfigs []string
	// Options are the bounds the render used, defaults filled in.
	Options Options
	// Warnings are non-fatal findings (Ignition's and Butane's warnings).
	Warnings []*Error
	// Image is the layered OS image new nodes of an image-mode pool boot
	// into: MachineConfig's osImageURL, and the currentImage and
	// desiredImage of the node annotations served. Empty otherwise.
	Image string
	// Overrides are what a later MachineConfig replaced of an earlier
	// one's (files, units, users ...): the later wins, as upstream's
	// merge, without failing, so it is said rather than kept silent.
	Overrides []Override
}

// Override is an entry of the merged config two MachineConfigs write
// differently; the later in merge order (By) wins over the earlier (Over).
type Override struct {
	Kind       string   `json:"kind"` // file, directory, link, unit, dropin, user, group, or spec (kernelType, osImageURL, baseOSExtensionsContainerImage)
	Name       string   `json:"name"` // its path or name; a dropin's is "unit/dropin"
	Fields     []string `json:"fields"`
	By         string   `json:"by"`         // the MachineConfig that wins
	BySource   string   `json:"bySource"`   // "file:line" of its entry
	Over       string   `json:"over"`       // the MachineConfig overridden
	OverSource string   `json:"overSource"` // "file:line" of its entry
}

// Reason is a convert.Reason plus the MachineConfig the field came from.
type Reason struct {
	convert.Reason
	MachineConfig string `json:"machineConfig"`
	Source        string `json:"source,omitempty"`
	Line          int    `json:"line,omitempty"`   // in Source; 0 when unknown
	Column        int    `json:"column,omitempty"` // of Line; 0 when unknown
	// ConfigPath is where the field sits in that MachineConfig, e.g.
	// "$.spec.config.storage.luks.0" (Path is its place in the merged config).
	ConfigPath convert.Path `json:"configPath,omitzero"`
}

// Provenance records which MachineConfig supplied each part of a render.
type Provenance struct {
	Files           map[string]string `json:"files,omitempty"`
	Units           map[string]string `json:"units,omitempty"`
	Users           map[string]string `json:"users,omitempty"`
	KernelArguments map[string]string `json:"kernelArguments,omitempty"`
	Directories     map[string]string `json:"directories,omitempty"`
	Links           map[string]string `json:"links,omitempty"`
}

// Options bound and label the output.
type Options struct {
	MinSpec convert.Version // default 3.0.0
	MaxSpec convert.Version // zero: the newest spec
	Spec    convert.Version // non-zero: force exactly this spec

	// ControllerVersion labels the rendered config's
	// generated-by-controller-version annotation when no input carries one.
	ControllerVersion string
}

// ControllerConfig is the part of machineconfiguration.openshift.io/v1
// ControllerConfig that rendering and serving use.
type ControllerConfig struct {
	BaseOSContainerImage           string
	BaseOSExtensionsContainerImage string
	KubeAPIServerServingCAData     []byte // decoded; served as /etc/kubernetes/kubelet-ca.crt
	CloudProviderCAData            []byte // decoded; served as /etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem
	ReleaseImageVersion            string // annotation machineconfiguration.openshift.io/release-image-version
	ControllerVersion              string // annotation .../generated-by-version
	Source                         string

	Name       string
	RootCAData []byte // decoded spec.rootCAData; served as /etc/machine-config-daemon/mcs-ca-bundle.crt
	// ServerURL is this server's URL for nodes, from spec.infra (a copy of
	// the Infrastructure); served as the node annotation
	// machineconfiguration.openshift.io/machineConfigServerURL. Empty when
	// spec.infra names no internal API host.
	ServerURL string
}
