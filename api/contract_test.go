package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/api"
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
