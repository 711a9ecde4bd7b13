package render

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
)

// finiteJSON returns v as encoding/json would write it, with every NaN or
// infinite float (which encoding/json refuses) written as null: a report
// with a value no number can hold is still written whole. It follows the
// json struct tags (names, "-", omitempty, omitzero) and the values'
// own MarshalJSON, and keeps the fields in their order.
func finiteJSON(v any) any { return finite(reflect.ValueOf(v)) }

var marshalerType = reflect.TypeFor[json.Marshaler]()

func finite(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if v.Type().Implements(marshalerType) {
			return v.Interface()
		}
		return finite(v.Elem())
	}
	if v.Type().Implements(marshalerType) && v.CanInterface() {
		return v.Interface()
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return v.Interface()
	case reflect.Slice, reflect.Array:
		return finiteList(v)
	case reflect.Map:
		return finiteMap(v)
	case reflect.Struct:
		return structFields(v)
	}
	if v.CanInterface() {
		return v.Interface()
	}
	return nil
}

// finiteList is finite of a slice or an array: null for a nil slice, a
// []byte as it is (base64, as encoding/json), else each element's.
func finiteList(v reflect.Value) any {
	if v.Kind() == reflect.Slice {
		if v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface() // []byte: base64, as encoding/json
		}
	}
	out := make([]any, v.Len())
	for i := range out {
		out[i] = finite(v.Index(i))
	}
	return out
}

// finiteMap is finite of a map: null for a nil map, else each value's under
// its key as encoding/json spells it.
func finiteMap(v reflect.Value) any {
	if v.IsNil() {
		return nil
	}
	out := make(map[string]any, v.Len())
	for it := v.MapRange(); it.Next(); {
		k, err := json.Marshal(it.Key().Interface())
		key := strings.Trim(string(k), `"`)
		if err != nil {
			continue
		}
		out[key] = finite(it.Value())
	}
	return out
}

// object is a JSON object whose fields keep their order.
type object []objectField

type objectField struct {
	name  string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.name)
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func structFields(v reflect.Value) object {
	var out object
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if sf.Anonymous && name == "" {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				out = append(out, structFields(fv)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if hasOpt(opts, "omitempty") && isEmpty(fv) || hasOpt(opts, "omitzero") && isZero(fv) {
			continue
		}
		out = append(out, objectField{name, finite(fv)})
	}
	return out
}

func hasOpt(opts, o string) bool {
	for _, x := range strings.Split(opts, ",") {
		if x == o {
			return true
		}
	}
	return false
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZero is encoding/json's omitzero test: IsZero() where the type has it.
func isZero(v reflect.Value) bool {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return true
	}
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		return z.IsZero()
	}
	return v.IsZero()
}
