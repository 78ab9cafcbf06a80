package admit_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ignition-mcs/mcs/admit"
	"github.com/ignition-mcs/mcs/convert"
)

// A config OpenShift writes at 3.5.0 that uses kernel arguments (spec 3.3):
// stored at 3.3.0; with the ceiling of a 4.13 rollback (3.2.0) the field
// that forces the higher spec is named.
func ExampleLower() {
	raw := []byte(`{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`)
	var res *admit.Result
	res, err := admit.Lower(raw, convert.V3_2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Declared, "->", res.Stored, res.Changed())
	fmt.Println(string(res.Config))
	for _, r := range res.Above {
		fmt.Println(r)
	}
	// Output:
	// 3.5.0 -> 3.3.0 true
	// {"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["nosmt"]}}
	// $.kernelArguments.shouldExist: kernel arguments need spec 3.3.0
}

// Spec 2, and what does not parse, is stored as it was written.
func ExampleLower_passed() {
	for _, raw := range []string{`{"ignition":{"version":"2.2.0"}}`, `{"ignition":{"version":"3.5.0"},"storge":{}}`} {
		res, err := admit.Lower([]byte(raw), convert.Version{})
		var pe *admit.PassError
		if errors.As(err, &pe) {
			fmt.Println(pe.Kind == admit.PassSpec2, pe.Kind == admit.PassInvalid, pe.Kind == admit.PassUnprovable, res.Changed())
		}
	}
	// Output:
	// true false false false
	// false true false false
}

// A config with more items than a review can prove within its time is
// stored as written too.
func ExampleLower_costly() {
	raw := `{"ignition":{"version":"3.5.0"},"storage":{"files":[` + strings.Repeat(`{"path":"/etc/a"},`, 10_000) + `{"path":"/etc/b"}]}}`
	res, err := admit.Lower([]byte(raw), convert.Version{})
	var pe *admit.PassError
	fmt.Println(errors.As(err, &pe) && pe.Kind == admit.PassCostly, res.Changed())
	// Output:
	// true false
}
