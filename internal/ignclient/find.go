package ignclient

import (
	"path/filepath"
	"testing"

	"github.com/ignition-mcs/mcs/internal/testkit"
)

// known lists the clients `make ignition-clients` builds, newest first, one
// per boot-image era (the newest spec each reads), without their binaries
// (Find fills those in: toolsDir()/ignition-<Version>).
func known() []Client {
	return []Client{
		{Version: "v2.27.0", Spec: "3.6.0"},
		{Version: "v2.24.0", Spec: "3.5.0"},
		{Version: "v2.19.0", Spec: "3.4.0"},
		{Version: "v2.14.0", Spec: "3.3.0"},
		{Version: "v2.9.0", Spec: "3.2.0", NoStateFlags: true},
		{Version: "v2.0.0", Spec: "3.0.0", NoStateFlags: true, NoFetchStage: true, ChrootUsers: true},
		{Version: "v0.35.0", Spec: "2.2.0", Spec2: true, ChrootUsers: true},
	}
}

// toolsDir is where `make ignition-clients` puts the clients.
func toolsDir() string { return testkit.ToolsDir("ignition") }

// Find returns every client with its binary, or ends the test: a missing
// client fails it when CI=true, where a skipped end-to-end test would hide
// that nothing ran, and skips it elsewhere.
func Find(t testing.TB) []Client {
	t.Helper()
	dir := toolsDir()
	var found []Client
	var missing []string
	for _, c := range known() {
		c.Bin = filepath.Join(dir, "ignition-"+c.Version)
		if !testkit.Executable(c.Bin) {
			missing = append(missing, c.Bin)
			continue
		}
		found = append(found, c)
	}
	if len(missing) > 0 {
		testkit.Missing(t, "real Ignition clients missing: %v; run `make ignition-clients` (or set MCS_TOOLS to the TOOLS dir holding ignition/)", missing)
	}
	return found
}

// Get returns the client of that version, ending the test as Find does
// when any client is missing.
func Get(t testing.TB, version string) Client {
	t.Helper()
	for _, c := range Find(t) {
		if c.Version == version {
			return c
		}
	}
	t.Fatalf("ignclient: no client %s in known()", version)
	return Client{}
}
