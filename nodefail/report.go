// Package nodefail takes the first-boot failure reports nodes send to POST /v1/node-failure (machine-config-operator PR #6124): authorized, of pools that exist, rate-limited per address and per pool, redacted, counted and told once per key.
package nodefail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"
)

// nodeReport is the body a node POSTs, as the PR's machine-config-daemon
// sends it. Pool, NodeID and Stage are required.
type nodeReport struct {
	Pool         string `json:"pool"`
	NodeID       string `json:"nodeID"`
	Stage        string `json:"stage"`
	ImageURL     string `json:"imageURL"`
	ErrorMessage string `json:"errorMessage"`
}

// bodyMax bounds a report's body: the PR's daemon sends well under 1 KiB
// (its error is cut to 200 characters here anyway).
const bodyMax = 16 << 10

// fieldError is a report refused for one field, which it names.
type fieldError struct {
	Field  string
	Reason string
	Err    error // what reading the body failed with, if that was it
}

func (e *fieldError) Error() string { return e.Field + ": " + e.Reason }

func (e *fieldError) Unwrap() error { return e.Err }

var (
	// poolName is a MachineConfigPool's name: a DNS subdomain.
	poolName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	// stageName is the PR's stages' shape ("firstboot-update").
	stageName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
)

// decode reads and checks a report from body (bounded by the caller). A
// refusal is a *fieldError naming the field ("body" for the body as a
// whole), wrapping the reader's error when reading failed.
func decode(body io.Reader) (nodeReport, error) {
	var r nodeReport
	if err := json.NewDecoder(body).Decode(&r); err != nil {
		var te *json.UnmarshalTypeError
		var big *http.MaxBytesError
		switch {
		case errors.As(err, &big):
			return r, &fieldError{"body", fmt.Sprintf("over %d bytes", big.Limit), err}
		case errors.As(err, &te) && te.Field != "":
			return r, &fieldError{te.Field, "want a string, got a JSON " + te.Value, nil}
		case errors.Is(err, io.EOF):
			return r, &fieldError{"body", "empty: want a JSON object with pool, nodeID, stage, imageURL and errorMessage", nil}
		}
		return r, &fieldError{"body", "not a JSON object: " + err.Error(), nil}
	}
	return r, r.check()
}

// check refuses a report missing a required field, or whose pool, node or
// stage is not a name.
func (r nodeReport) check() error {
	for _, f := range []struct{ name, value string }{{"pool", r.Pool}, {"nodeID", r.NodeID}, {"stage", r.Stage}} {
		if strings.TrimSpace(f.value) == "" {
			return &fieldError{f.name, "missing: pool, nodeID and stage are required", nil}
		}
	}
	switch {
	case !poolName.MatchString(r.Pool):
		return &fieldError{"pool", "not a MachineConfigPool name (lower-case letters, digits, '-' and '.', at most 253)", nil}
	case len(r.NodeID) > 253 || !printable(r.NodeID):
		return &fieldError{"nodeID", "not a node name or address (printable, at most 253 bytes)", nil}
	case !stageName.MatchString(r.Stage):
		return &fieldError{"stage", "not a stage name (letters, digits, '.', '_' and '-', at most 63)", nil}
	case len(r.ImageURL) > 4096 || !printable(r.ImageURL):
		return &fieldError{"imageURL", "not an image reference (printable, at most 4096 bytes)", nil}
	case !utf8.ValidString(r.ErrorMessage):
		return &fieldError{"errorMessage", "not UTF-8", nil}
	}
	return nil
}

func printable(s string) bool {
	for _, c := range s {
		if c < ' ' || c == 0x7f || c == utf8.RuneError {
			return false
		}
	}
	return true
}

// message is the Event's message, the PR's words with what it sanitizes
// sanitized: the node, the stage, the redacted error cut to errorMax and
// the image's registry.
func (r nodeReport) message() string {
	return fmt.Sprintf("Node %s failed during firstboot at stage '%s': %s (image: %s)",
		redact(r.NodeID), r.Stage, errorText(r.ErrorMessage), redact(imageText(r.ImageURL)))
}
