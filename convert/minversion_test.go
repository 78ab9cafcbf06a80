package convert

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// featureCases holds one case per row and feature of the spec table in the
// reference (new fields and new semantics): the fixture under
// testdata/features, the spec it needs, and the paths that need exactly it.
var featureCases = []struct {
	name  string
	want  Version
	paths []string
}{
	{"baseline-3.0", V3_0, nil},
	{"file-compression-3.0", V3_0, nil},
	{"s3-url-3.0", V3_0, nil},

	{"merge-compression", V3_1, []string{"$.ignition.config.merge.0.compression"}},
	{"merge-headers", V3_1, []string{"$.ignition.config.merge.0.httpHeaders"}},
	{"replace-compression", V3_1, []string{"$.ignition.config.replace.compression"}},
	{"replace-headers", V3_1, []string{"$.ignition.config.replace.httpHeaders"}},
	{"ca-compression", V3_1, []string{"$.ignition.security.tls.certificateAuthorities.0.compression"}},
	{"ca-headers", V3_1, []string{"$.ignition.security.tls.certificateAuthorities.0.httpHeaders"}},
	{"proxy", V3_1, []string{"$.ignition.proxy"}},
	{"proxy-noproxy", V3_1, []string{"$.ignition.proxy"}},
	{"file-contents-headers", V3_1, []string{"$.storage.files.0.contents.httpHeaders"}},
	{"file-append-headers", V3_1, []string{"$.storage.files.0.append.0.httpHeaders"}},
	{"mount-options", V3_1, []string{"$.storage.filesystems.0.mountOptions"}},
	{"sha256-file", V3_1, []string{"$.storage.files.0.contents.verification.hash"}},
	{"sha256-merge", V3_1, []string{"$.ignition.config.merge.0.verification.hash"}},

	{"luks-keyfile", V3_2, []string{"$.storage.luks.0"}},
	{"luks-clevis-tang", V3_2, []string{"$.storage.luks.0"}},
	{"luks-clevis-tpm2", V3_2, []string{"$.storage.luks.0"}},
	{"luks-clevis-threshold", V3_2, []string{"$.storage.luks.0"}},
	{"luks-clevis-custom", V3_2, []string{"$.storage.luks.0"}},
	{"partition-resize", V3_2, []string{"$.storage.disks.0.partitions.0.resize"}},
	{"user-shouldexist", V3_2, []string{"$.passwd.users.0.shouldExist"}},
	{"group-shouldexist", V3_2, []string{"$.passwd.groups.0.shouldExist"}},
	{"gs-url", V3_2, []string{"$.storage.files.0.contents.source"}},
	{"gs-url-uppercase", V3_2, []string{"$.storage.files.0.contents.source"}},
	{"gs-url-merge", V3_2, []string{"$.ignition.config.merge.0.source"}},

	{"kargs-shouldexist", V3_3, []string{"$.kernelArguments.shouldExist"}},
	{"kargs-shouldnotexist", V3_3, []string{"$.kernelArguments.shouldNotExist"}},
	{"format-none", V3_3, []string{"$.storage.filesystems.0.format"}},

	{"tang-advertisement", V3_4, []string{"$.storage.luks.0.clevis.tang.0.advertisement"}},
	{"luks-discard", V3_4, []string{"$.storage.luks.0.discard"}},
	{"luks-openoptions", V3_4, []string{"$.storage.luks.0.openOptions"}},
	{"arn-url", V3_4, []string{"$.storage.files.0.contents.source"}},
	{"arn-accesspoint", V3_4, []string{"$.storage.files.0.contents.source"}},

	{"luks-cex", V3_5, []string{"$.storage.luks.0.cex.enabled"}},

	{"mode-setuid", V3_6, []string{"$.storage.files.0.mode"}},
	{"mode-setgid", V3_6, []string{"$.storage.files.0.mode"}},
	{"mode-sticky-dir", V3_6, []string{"$.storage.directories.0.mode"}},
	{"clevis-custom-pin", V3_6, []string{"$.storage.luks.0.clevis.custom.pin"}},
}

// below returns the output spec just older than v.
func below(v Version) Version {
	i := slices.Index(OutputVersions, v)
	return OutputVersions[i-1]
}

func TestMinVersionFeatures(t *testing.T) {
	for _, tc := range featureCases {
		t.Run(tc.name, func(t *testing.T) {
			p := parseFeature(t, tc.name)
			if p.Version != tc.want {
				t.Errorf("fixture is labelled %s, want it labelled with the spec it needs, %s", p.Version, tc.want)
			}
			got, reasons := minVersion(&p.Config)
			if got != tc.want {
				t.Fatalf("MinVersion = %s, want %s (reasons %v)", got, tc.want, reasons)
			}
			var at []string
			for _, r := range reasons {
				if r.Version == tc.want {
					at = append(at, r.Path.String())
				}
				if r.Version.Less(V3_1) || tc.want.Less(r.Version) {
					t.Errorf("reason %v has a version outside 3.1.0…%s", r, tc.want)
				}
			}
			if !slices.Equal(at, tc.paths) {
				t.Errorf("paths needing %s = %q, want %q", tc.want, at, tc.paths)
			}

			// The spec just below fails, naming every path; the spec itself works.
			lower := below(tc.want)
			if tc.want == V3_0 {
				return // spec 2.2 has its own cases, TestSpec2
			}
			_, err := translateTo(&p.Config, lower)
			var ce *CannotExpressError
			if !errors.As(err, &ce) {
				t.Fatalf("translateTo %s: err = %v, want a CannotExpressError", lower, err)
			}
			if ce.Target != lower {
				t.Errorf("CannotExpressError.Target = %s, want %s", ce.Target, lower)
			}
			var named []string
			for _, r := range ce.Reasons {
				named = append(named, r.Path.String())
				if !lower.Less(r.Version) {
					t.Errorf("reason %v does not need more than %s", r, lower)
				}
			}
			for _, path := range tc.paths {
				if !slices.Contains(named, path) {
					t.Errorf("CannotExpressError names %q, want %q among them", named, path)
				}
			}
			if _, err := translateTo(&p.Config, tc.want); err != nil {
				t.Errorf("translateTo %s: %v", tc.want, err)
			}
		})
	}
}

// Every fixture under testdata/features has a case, so a new fixture cannot
// go unchecked.
func TestFeatureCasesCoverFixtures(t *testing.T) {
	names := map[string]bool{}
	for _, tc := range featureCases {
		names[tc.name] = true
	}
	for _, tc := range spec2Cases {
		names[tc.name] = true
	}
	for _, fx := range fixtures(t) {
		base, ok := strings.CutPrefix(fx.name, "features/")
		if ok && !names[strings.TrimSuffix(base, ".ign")] {
			t.Errorf("testdata/%s has no case in featureCases or spec2Cases", fx.name)
		}
	}
}

// translate lists every offending path, not just the first.
func TestCannotExpressListsEveryPath(t *testing.T) {
	raw := []byte(`{"ignition":{"version":"3.5.0","proxy":{"httpProxy":"http://p:3128"}},
	  "kernelArguments":{"shouldExist":["a"]},
	  "passwd":{"users":[{"name":"a","shouldExist":false}]},
	  "storage":{"luks":[{"name":"x","device":"/dev/vdb","cex":{"enabled":true}},
	                     {"name":"y","device":"/dev/vdc","discard":true,"clevis":{"tang":[{"url":"http://t","thumbprint":"x","advertisement":"{}"}]}}],
	             "files":[{"path":"/a","contents":{"source":"gs://b/o","verification":{"hash":"sha256-` + sixtyFourZeros + `"}}}]}}`)
	p := mustParse(t, "all", raw)
	v, reasons := minVersion(&p.Config)
	if v != V3_5 {
		t.Fatalf("MinVersion = %s, want 3.5.0", v)
	}
	want := map[Version][]string{
		V3_1: {"$.ignition.proxy", "$.storage.files.0.contents.verification.hash"},
		V3_2: {"$.passwd.users.0.shouldExist", "$.storage.files.0.contents.source", "$.storage.luks.0", "$.storage.luks.1"},
		V3_3: {"$.kernelArguments.shouldExist"},
		V3_4: {"$.storage.luks.1.clevis.tang.0.advertisement", "$.storage.luks.1.discard"},
		V3_5: {"$.storage.luks.0.cex.enabled"},
	}
	if !slices.IsSortedFunc(reasons, func(a, b Reason) int { return compareStrings(a.Path.String(), b.Path.String()) }) {
		t.Errorf("reasons are not sorted by path: %v", reasons)
	}
	for _, target := range []Version{V2_2, V3_0, V3_1, V3_2, V3_3, V3_4} {
		_, err := translateTo(&p.Config, target)
		var ce *CannotExpressError
		if !errors.As(err, &ce) {
			t.Fatalf("translateTo %s: %v, want a CannotExpressError", target, err)
		}
		var got, exp []string
		for _, r := range ce.Reasons {
			got = append(got, r.Path.String())
		}
		for v, paths := range want {
			if featureLevel(target).Less(v) {
				exp = append(exp, paths...)
			}
		}
		slices.Sort(got)
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			t.Errorf("translateTo %s names %q, want %q", target, got, exp)
		}
	}
}

const sixtyFourZeros = "0000000000000000000000000000000000000000000000000000000000000000"

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestReasonString(t *testing.T) {
	for _, tc := range []struct {
		r    Reason
		want string
	}{
		{Reason{NewPath("kernelArguments", "shouldExist"), "kernel arguments", V3_3}, "$.kernelArguments.shouldExist: kernel arguments need spec 3.3.0"},
		{Reason{NewPath("storage", "luks", 0, "discard"), "LUKS discard", V3_4}, "$.storage.luks.0.discard: LUKS discard needs spec 3.4.0"},
		{Reason{NewPath("ignition", "proxy"), "HTTP proxy settings", V3_1}, "$.ignition.proxy: HTTP proxy settings need spec 3.1.0"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
