package convert

import (
	"fmt"
	"reflect"
	"sync"
)

// copier deep-copies a value of one spec's types into the like-named types
// of another, field by field, as Ignition's config/translate does. It plans
// each pair of types once: Ignition's translator re-walks a type's fields
// for every element it copies, which made translation, not validation, the
// larger part of translate.
//
// Rules, in order: a custom function for the pair; a field listed in drop is
// skipped (the step's target cannot hold it, and MinVersion has refused
// configs that set it); like kinds copy (a struct field by field, every
// source field needing a target field of the same name); and between a
// pointer and a struct or scalar, nil and the zero value stand for each
// other, as they do in Ignition's steps where 3.3 turned optional pointers
// into values and back (an empty string is unset, util.StrToPtr).
type copier struct {
	custom map[typePair]func(dst, src reflect.Value)
	drop   map[reflect.Type]map[string]bool
	plans  sync.Map // typePair → func(dst, src reflect.Value)
}

type typePair struct{ from, to reflect.Type }

// rule configures a copier.
type rule func(*copier)

// custom copies A to B with f.
func custom[A, B any](f func(A) B) rule {
	return func(c *copier) {
		c.custom[typePair{reflect.TypeFor[A](), reflect.TypeFor[B]()}] = func(dst, src reflect.Value) {
			dst.Set(reflect.ValueOf(f(src.Interface().(A))))
		}
	}
}

// drop skips fields of T that the target spec lacks.
func drop[T any](fields ...string) rule {
	return func(c *copier) {
		t := reflect.TypeFor[T]()
		if c.drop[t] == nil {
			c.drop[t] = map[string]bool{}
		}
		for _, f := range fields {
			if _, ok := t.FieldByName(f); !ok {
				panic(fmt.Sprintf("convert: %s has no field %s to drop", t, f))
			}
			c.drop[t][f] = true
		}
	}
}

// newCopier returns a copier from A to B, planned at once so that a field
// without a counterpart panics at init rather than on some config.
func newCopier[A, B any](rules ...rule) *copier {
	c := &copier{custom: map[typePair]func(dst, src reflect.Value){}, drop: map[reflect.Type]map[string]bool{}}
	for _, r := range rules {
		r(c)
	}
	c.plan(reflect.TypeFor[A](), reflect.TypeFor[B]())
	return c
}

// copy copies *src into *dst.
func (c *copier) copy(dst, src any) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	c.plan(s.Type(), d.Type())(d, s)
}

func (c *copier) plan(from, to reflect.Type) func(dst, src reflect.Value) {
	key := typePair{from, to}
	if p, ok := c.plans.Load(key); ok {
		return p.(func(dst, src reflect.Value))
	}
	p := c.build(from, to)
	c.plans.Store(key, p)
	return p
}

func (c *copier) build(from, to reflect.Type) func(dst, src reflect.Value) {
	if f, ok := c.custom[typePair{from, to}]; ok {
		return f
	}
	switch fk, tk := from.Kind(), to.Kind(); {
	case fk == reflect.Ptr && tk == reflect.Ptr:
		elem := c.plan(from.Elem(), to.Elem())
		return func(dst, src reflect.Value) {
			if src.IsNil() {
				return
			}
			n := reflect.New(to.Elem())
			elem(n.Elem(), src.Elem())
			dst.Set(n)
		}
	case fk == reflect.Ptr:
		elem := c.plan(from.Elem(), to)
		return func(dst, src reflect.Value) {
			if !src.IsNil() {
				elem(dst, src.Elem())
			}
		}
	case tk == reflect.Ptr:
		elem := c.plan(from, to.Elem())
		return func(dst, src reflect.Value) {
			if src.IsZero() {
				return
			}
			n := reflect.New(to.Elem())
			elem(n.Elem(), src)
			dst.Set(n)
		}
	case fk != tk:
		panic(fmt.Sprintf("convert: no copy from %s to %s", from, to))
	case fk == reflect.Slice:
		elem := c.plan(from.Elem(), to.Elem())
		return func(dst, src reflect.Value) {
			if src.IsNil() {
				return
			}
			n := reflect.MakeSlice(to, src.Len(), src.Len())
			for i := 0; i < src.Len(); i++ {
				elem(n.Index(i), src.Index(i))
			}
			dst.Set(n)
		}
	case fk == reflect.Struct:
		type field struct {
			from, to int
			copy     func(dst, src reflect.Value)
		}
		var fields []field
		for i := 0; i < from.NumField(); i++ {
			f := from.Field(i)
			if c.drop[from][f.Name] {
				continue
			}
			g, ok := to.FieldByName(f.Name)
			if !ok || len(g.Index) != 1 {
				panic(fmt.Sprintf("convert: %s.%s has no counterpart in %s", from, f.Name, to))
			}
			fields = append(fields, field{i, g.Index[0], c.plan(f.Type, g.Type)})
		}
		return func(dst, src reflect.Value) {
			for _, f := range fields {
				f.copy(dst.Field(f.to), src.Field(f.from))
			}
		}
	case from == to:
		return func(dst, src reflect.Value) { dst.Set(src) }
	default:
		return func(dst, src reflect.Value) { dst.Set(src.Convert(to)) }
	}
}
