package skewgate

import (
	"regexp"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/ignition-mcs/mcs/convert"
)

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// IssuePath is where the stub puts its message: agetty shows
// /etc/issue.d/*.issue on the console above the login prompt.
func IssuePath(pool string) string {
	return "/etc/issue.d/mcs-cannot-join-" + unsafeName.ReplaceAllString(pool, "_") + ".issue"
}

// stubConfig is a config of spec v whose only content is the decision's
// message in /etc/issue.d: the node boots, cannot join, and says why.
func stubConfig(pool string, d Decision, v convert.Version) ([]byte, error) {
	cfg := convert.Config{
		Ignition: types.Ignition{Version: convert.Newest.String()},
		Storage:  types.Storage{Files: []types.File{convert.DataFile(IssuePath(pool), []byte("\n"+d.Message+"\n"))}},
	}
	return convert.Encode(&cfg, v, false)
}
