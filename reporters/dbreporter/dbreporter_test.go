package dbreporter_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/dbreporter"
	"github.com/wfhq/wf/reporters/reportertest"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// The real store is the reporter's writer.
var _ dbreporter.ProgressWriter = (*store.Store)(nil)

// waitBound bounds every wait on a test signal.
const waitBound = 10 * time.Second

// countingWriter wraps a ProgressWriter: it counts the writes, signals each
// successful one, and can be made to hang until its context ends or to fail.
type countingWriter struct {
	inner   dbreporter.ProgressWriter
	writes  atomic.Int64
	written chan struct{}
	hang    atomic.Bool
	fail    atomic.Bool
}

func newCountingWriter(inner dbreporter.ProgressWriter) *countingWriter {
	return &countingWriter{inner: inner, written: make(chan struct{}, 1000)}
}

func (w *countingWriter) SetProgress(ctx context.Context, id uuid.UUID, p json.RawMessage) error {
	w.writes.Add(1)
	if w.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if w.fail.Load() {
		return errors.New("database is down")
	}
	if err := w.inner.SetProgress(ctx, id, p); err != nil {
		return err
	}
	w.written <- struct{}{}
	return nil
}

// SetReportRecords passes the kept records on, hanging or failing as
// SetProgress does; it is not counted (the tests count progress writes).
func (w *countingWriter) SetReportRecords(ctx context.Context, id uuid.UUID, records json.RawMessage) error {
	if w.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if w.fail.Load() {
		return errors.New("database is down")
	}
	return w.inner.SetReportRecords(ctx, id, records)
}

// waitWrite waits for the next successful write.
func (w *countingWriter) waitWrite(t *testing.T) {
	t.Helper()
	select {
	case <-w.written:
	case <-time.After(waitBound):
		t.Fatal("no progress write happened")
	}
}

type bundle struct {
	store *store.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	s := dbtest.NewStore(t)
	_, err := s.EnsurePartitions(t.Context(), clock.Now(), 2)
	require.NoError(t, err)
	return &bundle{store: s}
}

// newTask inserts a task row and returns its identity.
func (b *bundle) newTask(t *testing.T) reporters.TaskInfo {
	t.Helper()
	res, err := b.store.InsertTasks(t.Context(), []store.NewTask{{
		SchemaName: wftype.SystemSchema, Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync,
		TaskType: "ingest", Inputs: json.RawMessage(`{}`), MaxRetries: 3,
	}})
	require.NoError(t, err)
	task := res[0].Task
	return reporters.TaskInfo{ID: task.ID, SchemaName: task.SchemaName, TaskType: task.TaskType}
}

// progress reads the task's progress.
func (b *bundle) progress(t *testing.T, id uuid.UUID) map[string]any {
	t.Helper()
	raw, err := b.store.GetProgress(t.Context(), id)
	require.NoError(t, err)
	if raw == nil {
		return nil
	}
	var p map[string]any
	require.NoError(t, json.Unmarshal(raw, &p))
	return p
}

// quiet returns a logger that drops everything.
// counted returns a new task, a counting writer over the store and a
// reporter of the task writing through it, configured by cfg (quiet, on the
// test clock).
func (b *bundle) counted(t *testing.T, cfg dbreporter.Config) (reporters.TaskInfo, *countingWriter, *dbreporter.Reporter) {
	t.Helper()
	task := b.newTask(t)
	w := newCountingWriter(b.store)
	cfg.Logger, cfg.Now = quiet(), clock.Now
	r, err := dbreporter.New(w, task.ID, cfg)
	require.NoError(t, err)
	return task, w, r
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// wantCounts is the JSON of the counts of envs.
func wantCounts(envs []reporters.Envelope) dbreporter.Counts {
	by, total := reportertest.Counts(envs)
	return dbreporter.Counts{Total: total, Succeeded: by[reporters.RecordSuccess], Rejected: by[reporters.RecordRejected], Failed: by[reporters.RecordFailed]}
}

// requireFinished finishes r and checks that its outputs and the task's
// stored progress count envs.
func (b *bundle) requireFinished(t *testing.T, r *dbreporter.Reporter, task reporters.TaskInfo, envs []reporters.Envelope) {
	t.Helper()
	out, err := r.Finish(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]any{"records": wantCounts(envs)}, out)
	b.requireProgress(t, task.ID, wantCounts(envs))
}

// requireProgress checks the counts stored in the task's progress.
func (b *bundle) requireProgress(t *testing.T, id uuid.UUID, want dbreporter.Counts) {
	t.Helper()
	p := b.progress(t, id)
	require.NotNil(t, p)
	require.Equal(t, float64(want.Total), p["total"])
	require.Equal(t, float64(want.Succeeded), p["succeeded"])
	require.Equal(t, float64(want.Rejected), p["rejected"])
	require.Equal(t, float64(want.Failed), p["failed"])
	at, err := time.Parse(time.RFC3339Nano, p["updated_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, clock.Now(), at, time.Minute)
}

func TestSuite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reportertest.Run(t, reportertest.Harness{
		NewTask: b.newTask,
		New: func(t *testing.T, task reporters.TaskInfo) reporters.Reporter {
			r, err := dbreporter.New(b.store, task.ID, dbreporter.Config{BatchSize: 100, Interval: 20 * time.Millisecond, Logger: quiet(), Now: clock.Now})
			require.NoError(t, err)
			return r
		},
		Check: func(t *testing.T, task reporters.TaskInfo, outputs map[string]any, want []reporters.Envelope) {
			if len(want) == 0 {
				require.Nil(t, outputs, "a run without records adds nothing to the outputs")
				require.Nil(t, b.progress(t, task.ID), "and writes no progress")
				return
			}
			got, err := json.Marshal(outputs)
			require.NoError(t, err)
			wantJSON, err := json.Marshal(map[string]any{"records": wantCounts(want)})
			require.NoError(t, err)
			require.JSONEq(t, string(wantJSON), string(got))
			b.requireProgress(t, task.ID, wantCounts(want))
		},
	})
}

func TestProgressVisibleMidRunAndWritesBatched(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const batch = 100
	// The interval is out of reach: only full batches and Finish write.
	task, w, r := b.counted(t, dbreporter.Config{BatchSize: batch, Interval: time.Hour})

	envs := reportertest.Envelopes(10_250)
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), r, envs[:150], 1))
	w.waitWrite(t)
	mid := b.progress(t, task.ID)
	require.NotNil(t, mid, "progress is visible before Finish")
	require.GreaterOrEqual(t, mid["total"], float64(batch))
	require.LessOrEqual(t, mid["total"], float64(150))

	require.NoError(t, reportertest.ReportConcurrently(t.Context(), r, envs[150:], 8))
	b.requireFinished(t, r, task, envs)

	n := int64(len(envs))
	maxWrites := (n+batch-1)/batch + 1
	require.LessOrEqual(t, w.writes.Load(), maxWrites, "never one write per record")
	require.GreaterOrEqual(t, w.writes.Load(), int64(2))
}

func TestWritesOnInterval(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task, w, r := b.counted(t, dbreporter.Config{Interval: 10 * time.Millisecond})

	envs := reportertest.Envelopes(3)
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), r, envs, 3))
	// Far fewer than a batch: only the interval writes them (a write may
	// come between two of the Reports; the next one catches up).
	for {
		w.waitWrite(t)
		if b.progress(t, task.ID)["total"] == float64(len(envs)) {
			break
		}
	}
	b.requireProgress(t, task.ID, wantCounts(envs))

	_, err := r.Finish(t.Context())
	require.NoError(t, err)
}

func TestBackgroundFailureRepairedByNextWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task, w, r := b.counted(t, dbreporter.Config{BatchSize: 10, Interval: time.Hour})
	w.fail.Store(true)
	envs := reportertest.Envelopes(30)
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), r, envs, 1))
	w.fail.Store(false)
	b.requireFinished(t, r, task, envs)
}

func TestFinishCancelledWhileWriting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task, w, r := b.counted(t, dbreporter.Config{Interval: time.Hour})
	envs := reportertest.Envelopes(5)
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), r, envs, 1))

	w.hang.Store(true) // the database stops answering during Finish
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := r.Finish(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "error writing the progress of task "+task.ID.String())
	require.Nil(t, b.progress(t, task.ID))

	w.hang.Store(false)
	b.requireFinished(t, r, task, envs)
}

func TestRejectsUnknownStatus(t *testing.T) {
	t.Parallel()
	r, err := dbreporter.New(newCountingWriter(nil), uuid.Must(uuid.NewV7()), dbreporter.Config{})
	require.NoError(t, err)
	err = r.Report(t.Context(), reporters.Envelope{Status: "OK"})
	require.ErrorContains(t, err, `status "OK", want SUCCESS, REJECTED or FAILED`)
	out, err := r.Finish(t.Context())
	require.NoError(t, err)
	require.Nil(t, out)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, err := dbreporter.New(newCountingWriter(nil), uuid.Nil, dbreporter.Config{BatchSize: -1, Interval: -time.Second, WriteTimeout: -time.Second})
	require.ErrorContains(t, err, "batch size is -1")
	require.ErrorContains(t, err, "interval is -1s")
	require.ErrorContains(t, err, "write timeout is -1s")
	_, err = dbreporter.NewBuilder(nil, dbreporter.Config{})
	require.ErrorContains(t, err, "the progress writer is nil")
}

func TestStoreProgress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.newTask(t)
	ctx := t.Context()

	p, err := b.store.GetProgress(ctx, task.ID)
	require.NoError(t, err)
	require.Nil(t, p)

	// Keys merge: the reporter's counts and a worker's own fields live side by side.
	require.NoError(t, b.store.SetProgress(ctx, task.ID, json.RawMessage(`{"percent": 10, "total": 1}`)))
	require.NoError(t, b.store.SetProgress(ctx, task.ID, json.RawMessage(`{"total": 2}`)))
	p, err = b.store.GetProgress(ctx, task.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"percent": 10, "total": 2}`, string(p))

	err = b.store.SetProgress(ctx, task.ID, json.RawMessage(`[1]`))
	require.ErrorContains(t, err, "want a JSON object")

	missing := uuid.Must(uuid.NewV7())
	require.ErrorIs(t, b.store.SetProgress(ctx, missing, json.RawMessage(`{}`)), wftype.ErrNotFound)
	_, err = b.store.GetProgress(ctx, missing)
	require.ErrorIs(t, err, wftype.ErrNotFound)
}

// TestKeepsFirstRecordsOfEachOutcome: the reporter keeps the first
// KeepRecords envelopes of each outcome, numbered by their place in the run,
// in the task's row; an envelope too large is kept shortened; the store
// pages through them by number and outcome; the next run's records replace
// them.
func TestKeepsFirstRecordsOfEachOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task, _, r := b.counted(t, dbreporter.Config{KeepRecords: 5, BatchSize: 7, Interval: time.Hour})
	envs := reportertest.Envelopes(200)
	// A success whose geometry alone is over the bound: kept without it.
	big := reporters.Success(reporters.Record{Type: "Feature", ID: "big",
		Geometry:   json.RawMessage(`{"type":"LineString","coordinates":[` + strings.Repeat("[1.5,2.5],", 3000) + `[1,2]]}`),
		Properties: map[string]any{"CODE": "big"}})
	envs = append([]reporters.Envelope{big}, envs...)
	// One at a time, so record n is envs[n-1].
	require.NoError(t, reportertest.ReportConcurrently(t.Context(), r, envs, 1))
	_, err := r.Finish(t.Context())
	require.NoError(t, err)

	all, err := b.store.ReportRecords(t.Context(), task.ID, store.ReportRecordsParams{Limit: 100})
	require.NoError(t, err)
	require.Len(t, all, 15)
	byStatus := map[string][]int64{}
	for i, rec := range all {
		if i > 0 {
			require.Greater(t, rec.N, all[i-1].N, "ordered by record number")
		}
		byStatus[rec.Status] = append(byStatus[rec.Status], rec.N)
		var env reporters.Envelope
		require.NoError(t, json.Unmarshal(rec.Envelope, &env))
		require.Equal(t, envs[rec.N-1].Status, env.Status)
		require.Equal(t, envs[rec.N-1].Record.ID, env.Record.ID)
	}
	// envs[1:] follows reportertest's pattern: 7 and 8 of every ten
	// rejected, 9 failed, shifted by the big one in front.
	require.Equal(t, []int64{1, 2, 3, 4, 5}, byStatus["SUCCESS"])
	require.Equal(t, []int64{9, 10, 19, 20, 29}, byStatus["REJECTED"])
	require.Equal(t, []int64{11, 21, 31, 41, 51}, byStatus["FAILED"])
	require.True(t, all[0].Truncated)
	var bigKept reporters.Envelope
	require.NoError(t, json.Unmarshal(all[0].Envelope, &bigKept))
	require.Nil(t, bigKept.Record.Geometry)
	require.Equal(t, "big", bigKept.Record.Properties["CODE"])
	require.LessOrEqual(t, len(all[0].Envelope), dbreporter.MaxKeptEnvelope)
	require.False(t, all[1].Truncated)

	// A page of refusals after record 10.
	page, err := b.store.ReportRecords(t.Context(), task.ID, store.ReportRecordsParams{
		Statuses: []string{"REJECTED", "FAILED"}, After: 10, Limit: 3})
	require.NoError(t, err)
	require.Len(t, page, 3)
	require.Equal(t, []int64{11, 19, 20}, []int64{page[0].N, page[1].N, page[2].N})

	// The next run of the task replaces what the last one kept.
	again, err := dbreporter.New(b.store, task.ID, dbreporter.Config{KeepRecords: 5, Logger: quiet(), Now: clock.Now})
	require.NoError(t, err)
	require.NoError(t, again.Report(t.Context(), envs[8]))
	_, err = again.Finish(t.Context())
	require.NoError(t, err)
	all, err = b.store.ReportRecords(t.Context(), task.ID, store.ReportRecordsParams{Limit: 100})
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, "REJECTED", all[0].Status)

	// A task with none, and none at all.
	none := b.newTask(t)
	all, err = b.store.ReportRecords(t.Context(), none.ID, store.ReportRecordsParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, all)
	_, err = b.store.ReportRecords(t.Context(), uuid.Must(uuid.NewV7()), store.ReportRecordsParams{Limit: 10})
	require.ErrorIs(t, err, wftype.ErrNotFound)
}
