package releases_test

import (
	"errors"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/ignition-mcs/mcs/releases"
)

// A cluster updated from 4.18.7 to 4.19.2: a rollback returns to 4.18,
// whose machine-config-operator reads up to spec 3.4.0.
func ExampleCeilingOf() {
	history := []configv1.UpdateHistory{
		{Version: "4.19.2", State: configv1.PartialUpdate},
		{Version: "4.18.7", State: configv1.CompletedUpdate},
	}
	target := history[1].Version
	c, err := releases.CeilingOf(history)
	if err != nil {
		fmt.Println(err)
		return
	}
	var _ releases.Ceiling = c
	fmt.Println(target, c.Spec, c.Release.Version, c.Rollback)
	fmt.Println(c.Source() != "")

	_, err = releases.CeilingOf(nil)
	fmt.Println(errors.Is(err, releases.ErrNoHistory))
	// Output:
	// 4.18.7 3.4.0 4.18.7 true
	// true
	// true
}

func ExampleFind() {
	var l releases.Lookup
	l, _ = releases.Find("4.13.10")
	fmt.Println(l.Row.Spec, l.Row.Accepts, l.Row.Ignition)
	fmt.Println(l.Row.Ignition != "")

	_, err := releases.Find("4.5.3")
	var re *releases.ReleaseError
	fmt.Println(errors.As(err, &re), err)
	// Output:
	// 3.2.0 3.4.0 v2.15.0
	// true
	// true OpenShift release "4.5.3": releases before 4.6 read Ignition spec 2.2 only
}

// The table, as docs print it.
func ExampleTable() {
	var rows []releases.Row = releases.Table
	for _, r := range rows[len(rows)-3:] {
		fmt.Println(r.Release, r.Spec, r.Commit != "")
	}
	// Output:
	// 5.0 3.5.0 true
	// 5.1 3.5.0 true
	// 5.2 3.5.0 true
}
