package convert

import (
	"fmt"
	"reflect"
	"testing"
)

// TestParseDeclaredValidIsParseDeclared: parsing through a ValidItems reads
// what ParseDeclared reads and refuses what it refuses: every fixture, as
// written and encoded at every spec, and configs with a key a spec does
// not have (at the top, deep, only when case is folded), a problem within
// an item or across items, or JSON the decode refuses. One ValidItems
// serves all, as the reviews share one.
func TestParseDeclaredValidIsParseDeclared(t *testing.T) {
	valid := &ValidItems{}
	raws := fixturesAtEverySpec(t)
	for _, v := range OutputVersions[1:] {
		for _, body := range []string{
			`"storage":{"files":[{"path":"/a","contents":{"source":"data:,a","sourc":1}}]}`,
			`"storage":{"files":[{"path":"/a","Contents":{"source":"data:,a"}}]}`,
			`"Storage":{"files":[{"path":"/a"}]}`,
			`"storage":{"files":[{"path":"/a","user":{"name":"core","nam":"x"}}]}`,
			`"systemd":{"units":[{"name":"a.service","dropins":[{"name":"a.conf","content":"[Unit]"}]}]}`,
			`"passwd":{"users":[{"name":"a","sshAuthorizedKey":["k"]}]}`,
			`"kernelArguments":{"shouldExist":["a"],"shouldnotExist":["b"]}`,
			`"ignition":{"version":"` + v.String() + `","timeouts":{"httpTotal":1,"x":1}}`,
			`"storage":{"files":[{"path":"/a"},{"path":"/a"}]}`,
			`"storage":{"files":[{"path":"/l/a"}],"links":[{"path":"/l","target":"/t"}]}`,
			`"storage":{"files":[{"path":"/a","mode":"420"}]}`,
			`"storage":{"files":[{"path":"/a","mode":420}],"directories":[{"path":"/d","mode":1023}]}`,
			`"storage":{"files":null,"links":[null]}`,
			`"storage":{"luks":[{"name":"l","device":"/dev/a","clevis":{"tang":[{"url":"http://t","thumbprint":"x","advertisement":"{}"}]}}]}`,
			`"storage":{"luks":[{"name":"l","device":"/dev/a","cex":{"enabled":true}}]}`,
		} {
			raws = append(raws, []byte(`{"ignition":{"version":"`+v.String()+`"},`+body+`}`))
		}
	}
	accepted, refused := 0, 0
	for _, raw := range raws {
		want, werr := ParseDeclared(raw)
		got, gerr := ParseDeclaredValid(raw, valid)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: through ValidItems %v, ParseDeclared %v", raw, gerr, werr)
			continue
		}
		if werr != nil {
			refused++
			continue
		}
		accepted++
		a, _ := Marshal(want.Config, false)
		b, _ := Marshal(got.Config, false)
		if got.Version != want.Version || string(a) != string(b) || !reflect.DeepEqual(got.declared, want.declared) || !reflect.DeepEqual(got.WrittenModes, want.WrittenModes) {
			t.Errorf("%s: through ValidItems reads\n%s\nParseDeclared\n%s", raw, b, a)
		}
	}
	t.Logf("%d configs: %d accepted, %d refused", len(raws), accepted, refused)
	if refused < 50 || accepted < 100 {
		t.Errorf("the cases do not exercise both ways")
	}
}

// FuzzParseDeclaredValid: whatever the bytes, parsing through a ValidItems
// refuses what ParseDeclared refuses, and reads the same config from what
// it accepts.
func FuzzParseDeclaredValid(f *testing.F) {
	f.Add([]byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","mode":420,"contents":{"source":"data:,a"}}]},"systemd":{"units":[{"name":"a.service","contents":"[Unit]"}]}}`))
	f.Add([]byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a","Contents":{"source":"data:,a"}}],"links":[{"path":"/l","target":"/a"}]}}`))
	f.Add([]byte(`{"ignition":{"version":"3.4.0"},"kernelArguments":{"shouldExist":["a"]},"passwd":{"users":[{"name":"core"}]}}`))
	valid := &ValidItems{}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, werr := ParseDeclared(raw)
		got, gerr := ParseDeclaredValid(raw, valid)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%s: through ValidItems %v, ParseDeclared %v", raw, gerr, werr)
		}
		if werr != nil {
			return
		}
		a, _ := Marshal(want.Config, false)
		b, _ := Marshal(got.Config, false)
		if string(a) != string(b) || !reflect.DeepEqual(got.declared, want.declared) || !reflect.DeepEqual(got.WrittenModes, want.WrittenModes) {
			t.Fatalf("%s: read otherwise", raw)
		}
	})
}
