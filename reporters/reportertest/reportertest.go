// Package reportertest is the one test suite every reporters.Reporter must
// pass, in the manner of runnertest: each reporter package describes how to
// build its reporter and how to check what it stored (through a Harness) and
// calls Run from its own test. The contract of reporters.Reporter
// (concurrent Report, Finish's outputs, Finish twice, Report after Finish, a
// cancelled Finish that can be retried) is therefore checked once, the same
// way, for every reporter.
package reportertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
)

// Harness tells the suite how to build and check the reporter under test.
type Harness struct {
	// NewTask returns the task a reporter is built for (a database reporter
	// needs a task row). Nil means a task with a fresh UUIDv7.
	NewTask func(t *testing.T) reporters.TaskInfo
	// New builds a fresh reporter for task. Clean-up goes to t.Cleanup.
	New func(t *testing.T, task reporters.TaskInfo) reporters.Reporter
	// Check verifies, after a successful Finish, what the reporter returned
	// (outputs) and stored, given the envelopes reported (want, in any order;
	// empty when none was).
	Check func(t *testing.T, task reporters.TaskInfo, outputs map[string]any, want []reporters.Envelope)
}

// Run runs the suite against the reporter the harness builds. Every check
// runs in parallel with the others.
func Run(t *testing.T, h Harness) {
	t.Helper()
	newTask := h.NewTask
	if newTask == nil {
		newTask = func(*testing.T) reporters.TaskInfo {
			return reporters.TaskInfo{ID: uuid.Must(uuid.NewV7()), SchemaName: "tenant_a", TaskType: "reportertest.ingest"}
		}
	}
	setup := func(t *testing.T) (reporters.TaskInfo, reporters.Reporter) {
		t.Helper()
		task := newTask(t)
		return task, h.New(t, task)
	}
	// reported is setup, then n envelopes reported from goroutines.
	reported := func(t *testing.T, n, goroutines int) (reporters.TaskInfo, reporters.Reporter, []reporters.Envelope) {
		t.Helper()
		task, rep := setup(t)
		envs := Envelopes(n)
		require.NoError(t, ReportConcurrently(t.Context(), rep, envs, goroutines))
		return task, rep, envs
	}

	// finished is reported, then a Finish that succeeds: its outputs.
	finished := func(t *testing.T, n, goroutines int) (reporters.TaskInfo, reporters.Reporter, []reporters.Envelope, map[string]any) {
		t.Helper()
		task, rep, envs := reported(t, n, goroutines)
		out, err := rep.Finish(t.Context())
		require.NoError(t, err)
		return task, rep, envs, out
	}

	t.Run("ConcurrentReports", func(t *testing.T) {
		t.Parallel()
		task, _, envs, out := finished(t, 8*300, 8)
		h.Check(t, task, out, envs)
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		task, rep := setup(t)
		out, err := rep.Finish(t.Context())
		require.NoError(t, err)
		h.Check(t, task, out, nil)
	})

	t.Run("FinishTwice", func(t *testing.T) {
		t.Parallel()
		task, rep, envs, first := finished(t, 25, 1)
		second, err := rep.Finish(t.Context())
		require.NoError(t, err, "a second Finish is safe")
		require.Equal(t, first, second, "a second Finish returns the same outputs")
		h.Check(t, task, second, envs)
	})

	t.Run("ReportAfterFinish", func(t *testing.T) {
		t.Parallel()
		task, rep, envs, out := finished(t, 3, 1)
		require.ErrorIs(t, rep.Report(t.Context(), envs[0]), reporters.ErrFinished)
		h.Check(t, task, out, envs)
	})

	t.Run("FinishCancelled", func(t *testing.T) {
		t.Parallel()
		task, rep, envs := reported(t, 40, 4)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := rep.Finish(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, rep.Report(t.Context(), envs[0]), reporters.ErrFinished,
			"a failed Finish still closes the reporter")

		out, err := rep.Finish(t.Context())
		require.NoError(t, err, "Finish can be retried after a failure")
		h.Check(t, task, out, envs)
	})
}

// Envelopes returns n distinct, valid envelopes: seven in ten SUCCESS, two
// REJECTED (echoing their input), one FAILED, with every kind of JSON value
// in their maps.
func Envelopes(n int) []reporters.Envelope {
	out := make([]reporters.Envelope, n)
	for i := range out {
		id := fmt.Sprintf("r%07d", i)
		switch i % 10 {
		case 7, 8:
			out[i] = reporters.Rejected(
				map[string]any{"CODE": fmt.Sprint(i), "NAME": nil},
				map[string]any{reporters.SystemExternalID: fmt.Sprint(i)},
				"NAME is required",
			)
		case 9:
			out[i] = reporters.Failed(reporters.Record{
				Type: "Feature", ID: id,
				Properties: map[string]any{"CODE": fmt.Sprint(i)},
			}, "the geometry service timed out")
		default:
			out[i] = reporters.Success(reporters.Record{
				Type:       "Feature",
				ID:         id,
				Geometry:   json.RawMessage(fmt.Sprintf(`{"type":"Point","coordinates":[%d.5,45.25]}`, i%180)),
				Properties: map[string]any{"CODE": fmt.Sprint(i), "NAME": "Berat", "n": i, "ok": true},
				Stats:      map[string]any{"area": float64(i) * 1.5, "bbox": []any{10.62, 44.79, 13.11, 46.68}},
				System: map[string]any{
					reporters.SystemGeoID:           id,
					reporters.SystemTransactionTime: "2026-02-26T18:09:04.131762+00:00",
					reporters.SystemDeletedAt:       nil,
				},
			})
		}
	}
	return out
}

// ReportConcurrently reports envs from the given number of goroutines, each
// taking an interleaved share, and returns the first error.
func ReportConcurrently(ctx context.Context, rep reporters.Reporter, envs []reporters.Envelope, goroutines int) error {
	var wg sync.WaitGroup
	errs := make([]error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := g; i < len(envs); i += goroutines {
				if err := rep.Report(ctx, envs[i]); err != nil {
					errs[g] = fmt.Errorf("error reporting envelope %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Counts returns the number of envs by status, and their total.
func Counts(envs []reporters.Envelope) (byStatus map[reporters.RecordStatus]int64, total int64) {
	byStatus = map[reporters.RecordStatus]int64{}
	for _, e := range envs {
		byStatus[e.Status]++
	}
	return byStatus, int64(len(envs))
}

// RequireSameEnvelopes fails the test unless got holds the envelopes of want
// in any order, comparing their JSON forms (a reporter that stores records
// decodes numbers and maps afresh).
func RequireSameEnvelopes(t testing.TB, want, got []reporters.Envelope) {
	t.Helper()
	require.Equal(t, jsonLines(t, want), jsonLines(t, got))
}

// jsonLines returns the sorted JSON forms of envs.
func jsonLines(t testing.TB, envs []reporters.Envelope) []string {
	t.Helper()
	lines := make([]string, len(envs))
	for i, e := range envs {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines[i] = string(b)
	}
	slices.Sort(lines)
	return lines
}
