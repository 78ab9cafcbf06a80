// Package impact compares two renders of a MachineConfig tree and says what the change does to each pool and to nodes of each Ignition era.
package impact

// schemaVersion is the version of the Report JSON document
// (docs/render-diff.schema.json). It changes only when a field is removed or
// changes meaning; new optional fields keep it.
const schemaVersion = 1

// Report is what `render diff` prints, as JSON with --output json.
type Report struct {
	SchemaVersion int `json:"schemaVersion"`
	// Old and New name the compared trees as given on the command line.
	Old string `json:"old"`
	New string `json:"new"`
	// Ceiling is the newest spec the booting nodes read (--max-spec).
	Ceiling string `json:"ceiling"`
	Changed bool   `json:"changed"`
	Holds   Holds  `json:"holds"`
	// Pools are every pool of either tree, by name.
	Pools []*Pool `json:"pools"`
}

// Holds are the conditions --fail-on tests.
type Holds struct {
	// SpecRaise: a pool of both trees is written at a newer spec.
	SpecRaise bool `json:"specRaise"`
	// Ceiling: a pool of the new tree needs a spec above the ceiling.
	Ceiling bool `json:"ceiling"`
	// EraLoss: nodes of an Ignition era that could join a pool no longer can.
	EraLoss bool `json:"eraLoss"`
	// AnyChange: a pool was added, removed or renders differently.
	AnyChange bool `json:"anyChange"`
}

// Pool is one pool's change.
type Pool struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// At is the MachineConfigPool's file and line (the old tree's, when
	// removed); empty for the default pools.
	At       Location   `json:"at"`
	Rendered Pair       `json:"rendered"`
	Spec     SpecChange `json:"spec"`
	Changes  []*Change  `json:"changes"`
	Eras     []*Era     `json:"eras"`
	// Overrides are what a later MachineConfig replaces of an earlier
	// one's in the new tree (render.Override): the later by name wins.
	Overrides []*Override `json:"overrides"`
}

// Override is one thing two MachineConfigs of the new tree write
// differently, the later winning; New marks one the old tree did not have.
type Override struct {
	Message string   `json:"message"`
	By      string   `json:"by"`   // the MachineConfig that wins
	Over    string   `json:"over"` // the MachineConfig overridden
	At      Location `json:"at"`   // the winner's entry
	New     bool     `json:"new"`
}

// Pair is a value in the old and the new tree; empty where absent.
type Pair struct {
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// SpecChange is the spec each tree writes the pool at (the Pair), and why.
type SpecChange struct {
	Pair
	Raised       bool `json:"raised"`
	AboveCeiling bool `json:"aboveCeiling"`
	// Reasons are the new tree's fields that need more than spec 3.0.0;
	// Added marks those the old tree did not have.
	Reasons []*Reason `json:"reasons"`
	// Dropped are the old tree's reasons the new tree no longer has.
	Dropped []*Reason `json:"dropped"`
}

// Reason is a field that forces a spec, and where it was written.
type Reason struct {
	// Field is the path in the merged config, e.g. "$.storage.luks.0.discard".
	Field string `json:"field"`
	What  string `json:"what"`
	Spec  string `json:"spec"`
	// Message says it as a sentence.
	Message string `json:"message"`
	// MachineConfig supplied the field, at ConfigPath inside it.
	MachineConfig string   `json:"machineConfig,omitempty"`
	ConfigPath    string   `json:"configPath,omitempty"`
	At            Location `json:"at"`
	Added         bool     `json:"added,omitempty"`
}

// Location is a line of an input file.
type Location struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Column is of Line, where the field's key starts; 0 when unknown.
	Column int `json:"column,omitempty"`
	// Tree is "old" or "new": which tree File belongs to.
	Tree string `json:"tree,omitempty"`
}

// Change is one thing of a pool's render added, removed or changed.
type Change struct {
	// Category is one of files, directories, links, units, users, sshKeys
	// (one per authorized key, named "user: type SHA256:… comment"), groups,
	// disks, raid, filesystems, luks, ignition, kernelArguments,
	// kernelArgumentsShouldNotExist, extensions, kernelType, fips,
	// osImageURL, baseOSExtensionsContainerImage.
	Category string `json:"category"`
	// Name is the file path, unit name, user name, argument, ...
	Name string `json:"name"`
	Op   Status `json:"op"`
	// MachineConfig supplies it (the old tree's, when removed).
	MachineConfig string   `json:"machineConfig,omitempty"`
	At            Location `json:"at"`
	// Local is the file its contents came from when that MachineConfig
	// is a Butane file's that embeds one (local:, contents_local:).
	Local string `json:"local,omitempty"`
	// Fields are what changed inside it (Op changed).
	Fields []*Field `json:"fields,omitempty"`
}

// Field is one changed value inside a changed thing.
type Field struct {
	// Field is its path inside the thing: "mode",
	// "contents.source", "dropins[mco-disabled.conf].contents".
	Field string `json:"field"`
	Old   *Value `json:"old,omitempty"`
	New   *Value `json:"new,omitempty"`
}

// Value is a field's value: its text when harmless (a mode, a flag, a
// name), else only the size and SHA-256 of its contents, which may hold
// secrets.
type Value struct {
	Text   string `json:"text,omitempty"`
	Size   *int   `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// The report's enumerations.
type (
	// Status is what the new tree does to a pool, or to one thing of a
	// pool's render (a Change's Op, never Unchanged).
	Status string
	// EraChange is what becomes of an era's nodes, old → new.
	EraChange string
)

// The values of the report's enumerations, as the JSON (and
// docs/render-diff.schema.json) writes them.
const (
	Added     Status = "added"
	Removed   Status = "removed"
	Changed   Status = "changed"
	Unchanged Status = "unchanged"

	EraStillAdmitted EraChange = "still-admitted"
	EraStillRefused  EraChange = "still-refused"
	EraNewlyRefused  EraChange = "newly-refused"
	EraNewlyAdmitted EraChange = "newly-admitted"
	EraAdmitted      EraChange = "admitted" // a new pool
	EraRefused       EraChange = "refused"  // a new pool
	EraGone          EraChange = "gone"     // a removed pool
)

// Era is what a node of one Ignition release line receives for the pool.
type Era struct {
	// Spec is the newest spec the era reads; Ignition the release asked as:
	// the era's oldest (v0.35.0, the last, for spec 2).
	Spec     string    `json:"spec"`
	Ignition string    `json:"ignition"`
	Old      *Outcome  `json:"old,omitempty"`
	New      *Outcome  `json:"new,omitempty"`
	Change   EraChange `json:"change"`
}

// Outcome is the server's answer to a node of an era.
type Outcome struct {
	Status   int  `json:"status"`
	Admitted bool `json:"admitted"`
	// Spec is the spec of the config served (the stub's, when refused).
	Spec string `json:"spec,omitempty"`
	// Reason is the skew gate's reason when refused.
	Reason string `json:"reason,omitempty"`
}
