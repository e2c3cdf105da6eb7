package cli

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestShortIDAsDashboardShowsIt: the dashboard shows an id as a prefix
// followed by "…" (api/ui/static/format.js, shortIDs); pasted as shown,
// with the "…" or "...", wf workflows show takes it, and the full id is
// still the one found.
func TestShortIDAsDashboardShowsIt(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"flow.yaml": twoStepFlow})
	code, out, errOut := e.run("workflows", "start", "--format", "json", "two")
	require.Equal(t, ExitOK, code, errOut)
	var started struct {
		RunID uuid.UUID `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &started), out)
	id := started.RunID.String()
	for _, shown := range []string{id[:13] + "…", id[:8] + "...", id[:23] + "…"} {
		code, out, errOut = e.run("workflows", "show", "--format", "json", shown)
		require.Equal(t, ExitOK, code, "%s: %s", shown, errOut)
		require.Contains(t, out, id, shown)
	}
	// The ellipsis alone, or in the middle, is no prefix.
	for _, bad := range []string{"…", id[:8] + "…" + id[len(id)-4:]} {
		code, _, errOut = e.run("workflows", "show", bad)
		require.Equal(t, ExitUsage, code, "%s: %s", bad, errOut)
		require.Contains(t, errOut, "is neither a run id")
	}
}
