package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

func TestBenchBurnDownJSON(t *testing.T) {
	t.Parallel()
	code, out, errOut := runWF(t, "--config", writeConfig(t, ""), "--database-url", dbtest.BaseURL(t), "--log-level", "warn",
		"bench", "burn-down", "--tasks", "200", "--slots", "20", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var res struct {
		Mode           string  `json:"mode"`
		Completed      int     `json:"completed"`
		InsertRate     float64 `json:"insert_rate"`
		CommitsPerTask float64 `json:"commits_per_task"`
		Postgres       struct {
			Settings map[string]string `json:"settings"`
		} `json:"postgres"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, "burn-down", res.Mode)
	require.Equal(t, 200, res.Completed)
	require.Positive(t, res.InsertRate)
	require.Contains(t, res.Postgres.Settings, "fsync")
}

func TestBenchUsage(t *testing.T) {
	t.Parallel()
	code, _, errOut := runWF(t, "bench", "burn-down", "extra")
	require.Equal(t, ExitUsage, code, errOut)
	code, _, errOut = runWF(t, "--config", writeConfig(t, ""), "--database-url", "postgres://wf@127.0.0.1:1/x?connect_timeout=2",
		"bench", "burn-down", "--runner", "pigeon")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `unknown runner "pigeon"`)
}
