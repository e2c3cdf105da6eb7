package spec

import (
	"reflect"
	"strconv"
)

// This file turns JSON Schemas (a workflow's inputs, task types' outputs)
// into Go types, so that expr's type checker proves a workflow's
// expressions against them: reading a property a schema does not declare,
// comparing a string with a number, or iterating over something that is not
// a list fails `wf validate` instead of a run.

// maxSchemaTypeDepth bounds how deep a schema is turned into a type; deeper
// values are typed "any" (checked at run time only).
const maxSchemaTypeDepth = 16

var anyType = reflect.TypeFor[any]()

// schemaType returns the Go type a value valid under schema has, as far as
// the schema says: string, int, float64, bool, a slice, a struct of the
// declared properties, or any when the schema leaves it open (no type, a
// union, a $ref, an object without properties).
func schemaType(schema any, depth int) reflect.Type {
	m, ok := schema.(map[string]any)
	if !ok || depth > maxSchemaTypeDepth {
		return anyType
	}
	typ, _ := m["type"].(string)
	if typ == "" {
		if _, hasProps := m["properties"]; hasProps {
			typ = "object"
		}
	}
	switch typ {
	case "string":
		return reflect.TypeFor[string]()
	case "integer":
		return reflect.TypeFor[int]()
	case "number":
		return reflect.TypeFor[float64]()
	case "boolean":
		return reflect.TypeFor[bool]()
	case "array":
		return reflect.SliceOf(schemaType(m["items"], depth+1))
	case "object":
		props, ok := m["properties"].(map[string]any)
		if !ok || len(props) == 0 {
			return reflect.TypeFor[map[string]any]()
		}
		names := sortedKeys(props)
		fields := make([]field, len(names))
		for i, name := range names {
			fields[i] = field{name: name, typ: schemaType(props[name], depth+1)}
		}
		return structType(fields)
	}
	return anyType
}

// field is one field of a struct type made for expr: name is what
// expressions write, typ its type.
type field struct {
	name string
	typ  reflect.Type
}

// structType makes a struct type whose fields expr knows by their names
// (the expr tag); the Go names are F0, F1, ...
func structType(fields []field) reflect.Type {
	sf := make([]reflect.StructField, len(fields))
	for i, f := range fields {
		sf[i] = reflect.StructField{
			Name: "F" + strconv.Itoa(i),
			Type: f.typ,
			Tag:  reflect.StructTag(`expr:"` + f.name + `"`),
		}
	}
	return reflect.StructOf(sf)
}

// isList reports whether t is a list type, or unknown (any), which a
// for_each may iterate over.
func isList(t reflect.Type) bool {
	if t == nil {
		return true
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Interface:
		return true
	}
	return false
}

// kindName names a type for messages in the words of JSON, with its
// article: "a string", "an object", "a value of unknown type".
func kindName(t reflect.Type) string {
	switch k := jsonKindOf(t); k {
	case "":
		return "a value of unknown type"
	case "object":
		return "an object"
	default:
		return "a " + k
	}
}
