package a

import "testing"

// Tests inside a are not users from outside.
func TestA(t *testing.T) { helper(); Result{}.Tidy() }
