package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/schemas"
)

// TestContractCoversRoutes checks that the OpenAPI document and the router
// list the same operations, so no route escapes the response checks.
func TestContractCoversRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var documented []string
	for path, item := range b.doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	require.ElementsMatch(t, documented, api.Routes(b.server))
	for _, name := range []string{"Problem", "Task", "Submission"} {
		require.Contains(t, b.doc.Components.Schemas, name)
	}
}

// TestContractTypedForClients: what client generators need. Every enum
// of a schema says its type (untyped, a generator makes it "any"; a
// server variable's enum has none to say), and the document names its
// servers.
func TestContractTypedForClients(t *testing.T) {
	t.Parallel()
	raw, err := schemas.FS.ReadFile(api.OpenAPIFile)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	var untyped []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["enum"]; ok {
				if _, typed := x["type"]; !typed {
					untyped = append(untyped, path)
				}
			}
			for k, e := range x {
				walk(e, path+"/"+k)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	walk(doc["paths"], "/paths")
	walk(doc["components"], "/components")
	require.Empty(t, untyped, "enums without a type")
	servers, _ := doc["servers"].([]any)
	require.NotEmpty(t, servers)
}
