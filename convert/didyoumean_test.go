package convert

import (
	"errors"
	"strings"
	"testing"
)

func TestUnknownKeyDidYouMean(t *testing.T) {
	for _, c := range []struct {
		name, config, want string
	}{
		{"top-level section", `{"ignition":{"version":"3.2.0"},"storag":{}}`, "$.storag: unknown key in spec 3.2.0 (a newer spec's field, or a typo): unused key storag; did you mean storage?"},
		{"list of a section", `{"ignition":{"version":"3.2.0"},"storage":{"filez":[]}}`, "did you mean files?"},
		{"inside a list item", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/x","contents":{"sourc":"data:,x"}}]}}`, "$.storage.files.0.contents.sourc: unknown key in spec 3.2.0 (a newer spec's field, or a typo): unused key sourc; did you mean source?"},
		{"embedded fields", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/x","overwite":true}]}}`, "did you mean overwrite?"},
		{"systemd", `{"ignition":{"version":"3.2.0"},"systemd":{"unit":[]}}`, "did you mean units?"},
		{"nothing near", `{"ignition":{"version":"3.2.0"},"storage":{"zzzzzz":[]}}`, "unused key zzzzzz"},
		{"a newer spec's field", `{"ignition":{"version":"3.2.0"},"kernelArguments":{"shouldExist":["a"]}}`, "unused key kernelArguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.config))
			var ie *InvalidError
			if !errors.As(err, &ie) || len(ie.Problems) != 1 {
				t.Fatalf("want one problem, got %v", err)
			}
			got := ie.Problems[0].Path.String() + ": " + ie.Problems[0].Message
			if !strings.Contains(got, c.want) {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if strings.HasPrefix(c.name, "nothing") || strings.HasPrefix(c.name, "a newer") {
				if strings.Contains(got, "did you mean") {
					t.Errorf("suggests where nothing is near: %s", got)
				}
			}
		})
	}
}
