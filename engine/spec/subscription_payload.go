package spec

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A subscription may declare the JSON Schema of its events' payload. Its
// expressions are then type-checked with event.payload typed by it, as a
// workflow's are by its inputs schema, and an event whose payload breaks it
// fails instead of creating a task.

// payloadSchema checks a subscription's payload schema, when it declares
// one, and returns it as JSON, compiled and as JSON values.
func (c *checker) payloadSchema(d *document, name string, raw json.RawMessage) (json.RawMessage, *jsonschema.Schema, any) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	key := "subscription:" + name + "/payload"
	schema, doc, violations := compileInputSchema(key, raw)
	for _, v := range violations {
		c.add(d, v.pointer("/payload"), d.violationError(v, "/payload"))
	}
	if schema == nil || len(violations) > 0 {
		return nil, nil, nil
	}
	return raw, schema, doc[inputsSchemaURL(key)]
}

// checkPayloadExpression type-checks a subscription's expression at ptr
// (already compiled against env, eventEnv or eventDedupEnv) with
// event.payload typed by the payload schema: operands that cannot combine,
// a result of the wrong type, a comparison with a value an enum does not
// allow. It returns the expression's type, nil when unknown or wrong.
func (c *checker) checkPayloadExpression(d *document, ptr, source string, payload, env any, result resultKind) reflect.Type {
	str := reflect.TypeFor[string]()
	event := structType([]field{
		{name: "event_id", typ: str},
		{name: "event_type", typ: str},
		{name: "scope", typ: str},
		{name: "schema_name", typ: str},
		{name: "payload", typ: inputsTypeFor(payload, readNamesOf(source)["event"]["payload"], 0)},
		{name: "created_at", typ: reflect.TypeFor[time.Time]()},
	})
	fields := []field{{name: "event", typ: event}}
	if _, dedup := env.(eventDedupEnv); dedup {
		fields = append(fields, field{name: "task_type", typ: str})
	}
	typed, err := d.compileExpression(ptr, source, reflect.New(structType(fields)).Elem().Interface(), result)
	if err != nil {
		if !typingArtefact(err.Message) {
			if strings.Contains(err.Message, "mismatched types") {
				err.Message += " (the payload schema types the operands)"
			}
			c.failAt(d, ptr, err)
		}
		return nil
	}
	c.checkComparisons(d, ptr, source, func(names []string) (any, bool) {
		if len(names) < 2 || names[0] != "event" || names[1] != "payload" {
			return nil, false
		}
		return schemaAt(payload, names[2:])
	})
	return typed.resultType()
}
