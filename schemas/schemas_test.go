package schemas_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/schemas"
)

func TestSpecSchemasCompile(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	for _, name := range schemas.SpecSchemas() {
		data, err := schemas.Read(name)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(data, &doc), name)
		require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"], name)
		require.Equal(t, schemas.ID(name), doc["$id"], name)
		require.NoError(t, c.AddResource(schemas.ID(name), bytes.NewReader(data)))
	}
	s, err := c.Compile(schemas.ID(schemas.SpecSchema))
	require.NoError(t, err)
	require.NoError(t, s.Validate(map[string]any{"kind": "TaskType", "name": "noop", "handler": map[string]any{"builtin": "noop"}}))
	require.Error(t, s.Validate(map[string]any{"kind": "TaskType", "name": "noop"}))
}

func TestEveryFileIsEmbeddedJSON(t *testing.T) {
	t.Parallel()
	names := schemas.Names()
	require.Subset(t, names, schemas.SpecSchemas())
	for _, name := range names {
		data, err := schemas.Read(name)
		require.NoError(t, err)
		require.True(t, json.Valid(data), name)
	}
	_, err := schemas.Read("nope.json")
	require.ErrorContains(t, err, "error reading schema nope.json")
}

// TestEveryJSONSchemaHasItsID: each JSON Schema names itself by its address
// in the repository, which is also where compilers register it.
func TestEveryJSONSchemaHasItsID(t *testing.T) {
	t.Parallel()
	for _, name := range schemas.Names() {
		if name == "openapi.json" {
			continue // an OpenAPI document, not a JSON Schema
		}
		data, err := schemas.Read(name)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(data, &doc), name)
		require.Equal(t, schemas.ID(name), doc["$id"], name)
	}
	_, err := schemas.Read("nope.json")
	require.ErrorContains(t, err, "error reading schema nope.json")
}
