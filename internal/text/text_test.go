package text

import (
	"strings"
	"testing"
)

func TestVerbS(t *testing.T) {
	for what, want := range map[string]string{"a file": "s", "files": "", "the address": "s", "kernel arguments": ""} {
		if got := VerbS(what); got != want {
			t.Errorf("VerbS(%q) = %q, want %q", what, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		n       int
		want    string
	}{
		{"short", "abc", 3, "abc"},
		{"cut", "abcdef", 3, "abc…"},
		{"inside a character", "ab€def", 3, "ab…"},
		{"nothing left", "€", 0, "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Truncate(tc.s, tc.n, "…"); got != tc.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

func TestBoundedAndForLog(t *testing.T) {
	long := strings.Repeat("a", 63) + "€" + strings.Repeat("b", 300)
	for _, tc := range []struct {
		name, got, want string
	}{
		{"bounded short", Bounded("worker"), "worker"},
		{"bounded at 64", Bounded(strings.Repeat("x", 64)), strings.Repeat("x", 64)},
		{"bounded inside a character", Bounded(long), strings.Repeat("a", 63) + "…"},
		{"for log short", ForLog("Ignition/2.19.0"), "Ignition/2.19.0"},
		{"for log long", ForLog(long), long[:256] + "…(366 bytes)"},
		{"for log inside a character", ForLog(strings.Repeat("a", 255) + "€b"), strings.Repeat("a", 255) + "…(259 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	pools := []string{"master", "worker", "infra"}
	for _, tc := range []struct {
		name, word string
		list       []string
		want       string
	}{
		{"case", "Worker", pools, "worker"},
		{"letter missed", "workr", pools, "worker"},
		{"letters swapped", "wroker", pools, "worker"},
		{"letter changed", "mastor", pools, "master"},
		{"kind", "MachineConfg", []string{"MachineConfig", "MachineConfigPool", "ControllerConfig"}, "MachineConfig"},
		{"long prefix", "kernelArgumentsList", []string{"kernelArguments", "kernelType"}, "kernelArguments"},
		{"too far", "database", pools, ""},
		{"short names need case alone", "inf", pools, ""},
		{"known", "worker", pools, ""},
		{"empty", "", pools, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Closest(tc.word, tc.list); got != tc.want {
				t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
}

func TestNear(t *testing.T) {
	role := []string{"machineconfiguration.openshift.io/role"}
	for _, tc := range []struct {
		name, word string
		want       string
	}{
		{"key missing a letter", "machineconfiguration.openshift.io/rol", role[0]},
		{"key in the same domain", "machineconfiguration.openshift.io/mco-built-in", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Near(tc.word, role); got != tc.want {
				t.Errorf("Near(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
}
