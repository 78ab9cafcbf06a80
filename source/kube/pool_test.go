package kube

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		err  bool
	}{
		{"", ModeSelf, false},
		{"self", ModeSelf, false},
		{"pool", ModePool, false},
		{"Pool", "", true},
		{"cluster", "", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMode(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("ParseMode(%q) = %q, %v", tc.in, got, err)
			}
		})
	}
}

func poolObject(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return u
}

// The choice is upstream's: the target once a machine has updated to it.
func TestRenderedConfig(t *testing.T) {
	const head = `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker"},`
	for _, tc := range []struct {
		name, body  string
		want        string
		wantSources string
		wantErr     string
	}{
		{"settled", `"spec":{"configuration":{"name":"rendered-worker-b","source":[{"name":"00-worker"},{"name":"99-worker-ssh"}]}},"status":{"updatedMachineCount":3,"configuration":{"name":"rendered-worker-b"}}}`,
			"rendered-worker-b", "00-worker 99-worker-ssh", ""},
		{"update started, no machine done", `"spec":{"configuration":{"name":"rendered-worker-b"}},"status":{"updatedMachineCount":0,"configuration":{"name":"rendered-worker-a"}}}`,
			"rendered-worker-a", "", ""},
		{"update under way", `"spec":{"configuration":{"name":"rendered-worker-b","source":[{"name":"x"}]}},"status":{"updatedMachineCount":1,"configuration":{"name":"rendered-worker-a"}}}`,
			"rendered-worker-b", "x", ""},
		{"count as float", `"spec":{"configuration":{"name":"rendered-worker-b"}},"status":{"updatedMachineCount":2.0,"configuration":{"name":"rendered-worker-a"}}}`,
			"rendered-worker-b", "", ""},
		{"no status yet", `"spec":{"configuration":{"name":"rendered-worker-b"}}}`,
			"rendered-worker-b", "", ""},
		{"nothing named", `"spec":{}}`, "", "", "$.status.configuration.name: the pool names no rendered MachineConfig"},
		{"count not a number", `"status":{"updatedMachineCount":"3"}}`, "", "", "$.status.updatedMachineCount: want an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, sources, err := renderedConfig(poolObject(t, head+tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || name != tc.want || strings.Join(sources, " ") != tc.wantSources {
				t.Fatalf("got %q %v %v, want %q %q", name, sources, err, tc.want, tc.wantSources)
			}
		})
	}
}

// FuzzRenderedConfig: any pool object yields a name or a located error.
func FuzzRenderedConfig(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"w"},"spec":{"configuration":{"name":"a"}},"status":{"updatedMachineCount":1,"configuration":{"name":"b","source":[{"name":"x"}]}}}`,
		`{"status":{"updatedMachineCount":"1"}}`,
		`{"spec":{"configuration":{"source":[1,{"name":2},{"name":"y"}]}}}`,
		`{"spec":[],"status":null}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(data) != nil {
			return
		}
		name, _, err := renderedConfig(u)
		if (name == "") == (err == nil) {
			t.Fatalf("name %q, err %v", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "$.") {
			t.Fatalf("error without a path: %v", err)
		}
	})
}
