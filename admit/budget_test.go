package admit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/ignition-mcs/mcs/convert"
)

// manyItems is a 3.5.0 config of files (each with contents) and links (to
// the files), which kernelArguments keep from being lowered below 3.3.
func manyItems(files, links int) string {
	var b strings.Builder
	b.WriteString(`{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]},"storage":{"files":[`)
	for i := range files {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"/etc/f/%d","contents":{"source":"data:,x"}}`, i)
	}
	b.WriteString(`],"links":[`)
	for i := range links {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"/etc/l/%d","target":"/etc/f/%d"}`, i, i)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// partitions is a 3.5.0 config of one disk with n partitions: Ignition's
// validation compares each with every other for overlaps.
func partitions(n int) string {
	var b strings.Builder
	b.WriteString(`{"ignition":{"version":"3.5.0"},"storage":{"disks":[{"device":"/dev/vdb","partitions":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"number":%d,"startMiB":%d,"sizeMiB":1}`, i+1, 2*i+1)
	}
	b.WriteString(`]}]}}`)
	return b.String()
}

func TestTooCostly(t *testing.T) {
	for _, c := range []struct {
		name   string
		config string
		want   string // in the error; "": none
	}{
		{"a rendered config's size", manyItems(300, 5), ""},
		{"at the bound", manyItems(maxItems-10, 10), ""},
		{"100k files", manyItems(100_000, 0), "100000 files, directories, links, units, dropins"},
		{"16k files, 16k links", manyItems(4000, 4000), "4000 links, each compared with 8000 paths"},
		{"units and dropins count", `{"ignition":{"version":"3.5.0"},"systemd":{"units":[` + strings.Repeat(`{"name":"a.service","dropins":[{"name":"a.conf"},{"name":"b.conf"}]},`, maxItems/3+1) + `{"name":"z.service"}]}}`, "files, directories, links, units, dropins"},
		{"a GPT's partitions", partitions(128), ""},
		{"4000 partitions on one disk", partitions(4000), "16000000 comparisons"},
		{"users count", `{"ignition":{"version":"3.5.0"},"passwd":{"users":[` + strings.Repeat(`{"name":"u"},`, maxItems) + `{"name":"z"}]}}`, "users and groups"},
		{"not JSON: the parser says so", `{"ignition":`, ""},
		{"a type mistake: the parser says so", `{"storage":{"files":7}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := tooCostly([]byte(c.config))
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("tooCostly: %v, want %q", err, c.want)
			}
		})
	}
}

// A config past the bounds, or one whose review ended, is stored as
// written with a PassCostly error; one cut short is not kept by the cache,
// one past the bounds costs one linear pass.
func TestLowerBudget(t *testing.T) {
	big := []byte(manyItems(100_000, 0))
	res, err := Lower(big, convert.V3_4)
	var pe *PassError
	if !errors.As(err, &pe) || pe.Kind != PassCostly || string(res.Config) != string(big) || res.Changed() {
		t.Fatalf("100k files: %v, changed %v", err, res.Changed())
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the client went"))
	small := []byte(kargs35)
	c := newLowerCache(defaultCacheBytes)
	res, err = c.lower(ctx, small, convert.V3_4, convert.Version{})
	if !errors.As(err, &pe) || pe.Kind != PassCostly || res.Changed() || !strings.Contains(err.Error(), "the client went") {
		t.Fatalf("a review ended: %v, changed %v", err, res.Changed())
	}
	res, err = c.lower(context.Background(), small, convert.V3_4, convert.Version{})
	if err != nil || !res.Changed() {
		t.Errorf("the same config after a review cut short: %v, changed %v (kept from the cut one?)", err, res.Changed())
	}
}

// A review of a config too costly to prove is allowed unchanged, with a
// warning saying why, and counted as costly.
func TestReviewCostly(t *testing.T) {
	w := New(Config{})
	w.SetCeiling(Ceiling{Spec: convert.V3_4, Reader: "OpenShift 4.18.7", Source: "test"})
	_, resp := post(t, w, reviewBody(admissionv1.Create, "alice", mcObject("99-many", manyItems(20_000, 0)), nil))
	if resp == nil || !resp.Allowed || resp.Patch != nil || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "too costly to prove") {
		t.Fatalf("response %+v", resp)
	}
	if s := statusOf(t, w); s.Reviews[PassCostly] != 1 {
		t.Errorf("reviews %v, want one costly", s.Reviews)
	}
}
