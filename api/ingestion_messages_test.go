package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIngestionTraversalMessages: a source with a '..' segment is refused
// at /source in plain words, whether written as is or percent-encoded
// (never the JSON Schema library's "not failed"), and nothing is queued.
func TestIngestionTraversalMessages(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	for _, c := range []struct{ source, want string }{
		{"../../etc/passwd", `must not be a path with a '..' segment; got "../../etc/passwd"`},
		{"data/../secret.geojson", `must not be a path with a '..' segment; got "data/../secret.geojson"`},
		{"%2e%2e/%2e%2e/etc/passwd", "'..' segment"},
		{"data/%2E%2E/secret.geojson", "'..' segment"},
	} {
		res := b.do("POST", "/ingestion/cat-a/roads", tokAdmin, ingestionBody(c.source))
		require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", c.source, res.body)
		var p struct {
			Errors []struct {
				Pointer string `json:"pointer"`
				Message string `json:"message"`
			} `json:"errors"`
		}
		require.NoError(t, json.Unmarshal(res.body, &p), string(res.body))
		require.Len(t, p.Errors, 1, string(res.body))
		require.Equal(t, "/source", p.Errors[0].Pointer, string(res.body))
		t.Logf("%s: %s", c.source, p.Errors[0].Message)
		require.Contains(t, p.Errors[0].Message, c.want, c.source)
		require.NotContains(t, string(res.body), "not failed")
	}
	var queued int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'ingestion'`).Scan(&queued))
	require.Zero(t, queued)
}
