// Package nilness tells a nil interface value from one holding a nil
// pointer, func, map, chan or slice, for the packages of this module that
// validate their arguments.
package nilness

import "reflect"

// IsNil reports whether v is nil or holds a nil pointer, func, map, chan,
// slice or interface: a value that would panic on first use.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
