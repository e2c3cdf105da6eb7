package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/inproc"
)

// TestRunSaysWhatItDoesNotServe: `wf run` without the gcp and
// elasticsearch sections says at start, one line per task type, that it
// does not serve the types whose handlers need them, naming the setting.
func TestRunSaysWhatItDoesNotServe(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"cloud.yaml": `kind: TaskType
name: gcp_provision
handler: {builtin: gcp_provision}
---
kind: TaskType
name: elasticsearch
handler: {builtin: elasticsearch}
---
kind: TaskType
name: local
handler: {builtin: noop}
`})
	args := append(e.global(), "run", "--listen", "127.0.0.1:0", "--poll-interval", "100ms")
	logs := inproc.Start(t, "wf run", func(ctx context.Context, stdout, stderr io.Writer) int {
		return MainWith(ctx, args, stdout, stderr, e.opts)
	})
	want := []string{
		`"msg":"task type not served by this instance: its service is not configured","task_type":"elasticsearch","reason":"elasticsearch.addresses is not set (WF_ELASTICSEARCH_ADDRESSES)"`,
		`"msg":"task type not served by this instance: its service is not configured","task_type":"gcp_provision","reason":"gcp.project is not set (WF_GCP_PROJECT)"`,
	}
	require.Eventually(t, func() bool {
		out := logs.String()
		for _, w := range want {
			if !strings.Contains(out, w) {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond, "wf run did not say what it does not serve")
	require.Equal(t, 2, strings.Count(logs.String(), "task type not served"), "one line per type, none for local")
}
