// Package a declares what package b uses and what nobody uses.
package a

// Used is called from b.
func Used() Result { return Result{} }

// Result is met by b only through Used's result.
type Result struct{ Kind Kind }

// Kind is an enum of Result's field.
type Kind string

// KindOne is a value of a type b meets.
const KindOne Kind = "one"

// Unused has no caller outside a.
func Unused() {}

// UnusedConst has no user outside a.
const UnusedConst = 1

// String satisfies fmt.Stringer: a method that may meet an interface counts as used.
func (r Result) String() string { return string(r.Kind) }

// Tidy is a method only a calls.
func (r Result) Tidy() {}

// helper is unexported: never reported.
func helper() { Unused(); _ = UnusedConst }
