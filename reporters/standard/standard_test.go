package standard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/dbreporter"
	"github.com/wfhq/wf/reporters/gcsreporter"
	"github.com/wfhq/wf/reporters/reportertest"
	"github.com/wfhq/wf/reporters/standard"
)

// memoryProgress is a ProgressWriter that keeps the last progress per task.
type memoryProgress struct {
	mu   sync.Mutex
	last map[uuid.UUID]json.RawMessage
}

func (m *memoryProgress) SetProgress(_ context.Context, id uuid.UUID, p json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[uuid.UUID]json.RawMessage{}
	}
	m.last[id] = p
	return nil
}

func (m *memoryProgress) SetReportRecords(context.Context, uuid.UUID, json.RawMessage) error {
	return nil
}

func TestOpenWiresBothReporters(t *testing.T) {
	t.Parallel()
	progress := &memoryProgress{}
	dir := t.TempDir()
	f, err := standard.Open(t.Context(), standard.Config{Progress: progress, GCS: gcsreporter.Config{LocalDir: dir}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	require.Equal(t, []string{reporters.NameDatabase, reporters.NameGCSDetailed}, f.Names())

	task := reporters.TaskInfo{ID: uuid.Must(uuid.NewV7()), SchemaName: "tenant_a", TaskType: "ingest"}
	rep, err := f.New([]string{reporters.NameDatabase, reporters.NameGCSDetailed}, task)
	require.NoError(t, err)
	envs := reportertest.Envelopes(100)
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), rep, envs, 4))
	out, err := rep.Finish(t.Context())
	require.NoError(t, err)

	require.Equal(t, dbreporter.Counts{Total: 100, Succeeded: 70, Rejected: 20, Failed: 10}, out["records"])
	require.EqualValues(t, 100, out["report_records"])
	require.True(t, strings.HasPrefix(out["report_url"].(string), "file://"+dir+"/tenant_a/ingest/"), out["report_url"])
	require.Contains(t, string(progress.last[task.ID]), `"total":100`)
}

func TestOpenValidates(t *testing.T) {
	t.Parallel()
	_, err := standard.Open(t.Context(), standard.Config{})
	require.ErrorContains(t, err, "the progress writer is nil")
	_, err = standard.Open(t.Context(), standard.Config{Progress: &memoryProgress{}, GCS: gcsreporter.Config{BucketURL: "ftp://x"}})
	require.ErrorContains(t, err, `scheme "ftp" is not supported`)
}
