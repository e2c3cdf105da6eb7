package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// scaleChunk bounds the rows one history INSERT writes.
const scaleChunk = 1_000_000

// scale times the claim statement with more and more finished tasks in older
// partitions. History goes into the months two to five before now; the tasks
// claimed are new (this month). Between steps the claimed tasks are deleted
// and the table vacuumed, as autovacuum would, so each step starts alike.
func scale(ctx context.Context, e *env, res *Result) error {
	log := e.cfg.Logger
	st := e.store
	now := time.Now().UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	from, to := month.AddDate(0, -5, 0), month.AddDate(0, -1, 0)
	cl := e.client(e.pool)
	rows := slices.Sorted(slices.Values(e.cfg.ScaleRows))
	have := 0
	m, err := startMeter(ctx, e)
	if err != nil {
		return err
	}
	for _, want := range rows {
		began := time.Now()
		for have < want {
			k := min(scaleChunk, want-have)
			// Spread each chunk over the whole range, so every older
			// partition grows alike.
			log.Info("building history", "rows", k, "total", have+k)
			if err := st.InsertFinishedTasks(ctx, taskTypeName, from, to.Add(-time.Millisecond), k); err != nil {
				return err
			}
			have += k
		}
		if err := st.VacuumAnalyzeTasks(ctx); err != nil {
			return err
		}
		build := time.Since(began)
		point, err := timeClaims(ctx, e, cl)
		if err != nil {
			return err
		}
		point.FinishedRows, point.BuildSeconds = want, build.Seconds()
		log.Info("claim timed", "finished_rows", want, "p50_ms", point.Claim.P50, "p99_ms", point.Claim.P99)
		res.Scale = append(res.Scale, point)
	}
	res.CPU = m.cpu()
	return nil
}

var errRolledBack = errors.New("rolled back")

// timeClaims enqueues enough new tasks, times ScaleClaims claims of
// ScaleBatch tasks, explains one more, and deletes the new tasks again.
func timeClaims(ctx context.Context, e *env, cl *client.Client) (ScalePoint, error) {
	cfg := e.cfg
	st := e.store
	need := 20 * cfg.ScaleBatch
	reqs := make([]client.Request, 5000)
	for i := range reqs {
		reqs[i] = client.Request{TaskType: taskTypeName, Inputs: payload(0)}
	}
	for left := need; left > 0; left -= len(reqs) {
		if _, err := cl.EnqueueMany(ctx, reqs[:min(left, len(reqs))]); err != nil {
			return ScalePoint{}, err
		}
	}
	if err := st.VacuumAnalyzeTasks(ctx); err != nil {
		return ScalePoint{}, err
	}
	params := store.ClaimParams{
		Owner: "bench-scale", Total: cfg.ScaleBatch,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: taskTypeName, Max: cfg.ScaleBatch, Lease: execution.DefaultLease}},
	}
	// Warm up the connection's statement cache and the buffers (claims
	// that commit: the backlog the timed claims read starts after them).
	for range 10 {
		if _, err := st.ClaimTasks(ctx, params); err != nil {
			return ScalePoint{}, err
		}
	}
	// Each timed claim runs in a transaction that is rolled back: the
	// statement's cost is measured without the commit's flush (whose
	// latency is the disk's, whatever the history), and every claim finds
	// the same backlog.
	took := make([]time.Duration, 0, cfg.ScaleClaims)
	for range cfg.ScaleClaims {
		var d time.Duration
		err := st.InTx(ctx, func(tx *store.Store) error {
			t0 := time.Now()
			got, err := tx.ClaimTasks(ctx, params)
			d = time.Since(t0)
			if err != nil {
				return err
			}
			if len(got) != cfg.ScaleBatch {
				return fmt.Errorf("claimed %d tasks, want %d", len(got), cfg.ScaleBatch)
			}
			return errRolledBack
		})
		if !errors.Is(err, errRolledBack) {
			return ScalePoint{}, err
		}
		took = append(took, d)
	}
	plan, err := st.ExplainClaim(ctx, params)
	if err != nil {
		return ScalePoint{}, err
	}
	if _, err := st.DeleteUnfinishedTasks(ctx, taskTypeName); err != nil {
		return ScalePoint{}, err
	}
	if err := st.VacuumAnalyzeTasks(ctx); err != nil {
		return ScalePoint{}, err
	}
	return ScalePoint{Batch: cfg.ScaleBatch, Claim: percentiles(took), Explain: plan}, nil
}
