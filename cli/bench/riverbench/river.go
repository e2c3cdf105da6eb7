package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"golang.org/x/sync/errgroup"

	"github.com/wfhq/wf/cli/bench"
)

// riverModule is River's module path, for its version in the build.
const riverModule = "github.com/riverqueue/river"

// The settings of River's own benchmark (cmd/river/riverbench, `river bench`):
// 2,000 workers on the default queue, a fetch cooldown of 2 ms and a poll of
// 20 ms, tuned by River's authors for throughput; its pool is pgxpool's
// default (max(4, CPUs) connections), as `river bench --database-url` opens it.
const (
	riverWorkers       = 2000
	riverFetchCooldown = 2 * time.Millisecond
	riverFetchPoll     = 20 * time.Millisecond
)

// riverRival runs River as bench.Rival: InsertManyFast (COPY) for the bulk
// enqueue, a client at River's benchmark settings for the burn-down.
type riverRival struct {
	workers int
	logger  *slog.Logger
}

var _ bench.Rival = (*riverRival)(nil)

// benchArgs are the jobs' arguments, as in River's benchmark.
type benchArgs struct {
	Num int `json:"num"`
}

// Kind names the job kind.
func (benchArgs) Kind() string { return "wf_bench_noop" }

// noopWorker completes every job at once.
type noopWorker struct {
	river.WorkerDefaults[benchArgs]
}

// Work does nothing.
func (noopWorker) Work(context.Context, *river.Job[benchArgs]) error { return nil }

func (r *riverRival) Name() string {
	version := "(unknown version)"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == riverModule {
				version = d.Version
			}
		}
	}
	return "River " + version
}

func (r *riverRival) Settings() string {
	return fmt.Sprintf("%d workers (its benchmark's settings)", r.workers)
}

// Prepare applies River's migrations to the rival's own database.
func (r *riverRival) Prepare(ctx context.Context, dbURL string) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("error connecting to River's database: %w", err)
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: r.logger})
	if err != nil {
		return fmt.Errorf("error preparing River's migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("error applying River's migrations: %w", err)
	}
	return nil
}

// Enqueue inserts the jobs with InsertManyFast (COPY FROM), batch jobs a
// call and conns calls at once, on a pool of conns connections (as wf's bulk
// enqueue runs).
func (r *riverRival) Enqueue(ctx context.Context, dbURL string, jobs, batch, conns int) error {
	pc, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("error reading River's database URL: %w", err)
	}
	pc.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("error connecting to River's database: %w", err)
	}
	defer pool.Close()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: r.logger})
	if err != nil {
		return fmt.Errorf("error creating River's insert client: %w", err)
	}
	sizes := make(chan int)
	g, gctx := errgroup.WithContext(ctx)
	for range conns {
		g.Go(func() error {
			for size := range sizes {
				params := make([]river.InsertManyParams, size)
				for i := range params {
					params[i].Args = benchArgs{Num: i}
				}
				n, err := client.InsertManyFast(gctx, params)
				if err != nil {
					return fmt.Errorf("error inserting River's jobs: %w", err)
				}
				if n != size {
					return fmt.Errorf("only %d of %d jobs were inserted into River", n, size)
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(sizes)
		for left := jobs; left > 0; left -= batch {
			select {
			case sizes <- min(left, batch):
			case <-gctx.Done():
				return nil
			}
		}
		return nil
	})
	return g.Wait()
}

// Work starts a River client at its benchmark's settings, counts completed
// jobs from its event subscription (as River's benchmark does) until all are
// done, stops it and reads the window from River's rows.
func (r *riverRival) Work(ctx context.Context, dbURL string, jobs int) (bench.RivalWork, error) {
	var out bench.RivalWork
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return out, fmt.Errorf("error connecting to River's database: %w", err)
	}
	defer pool.Close()
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPoll,
		Logger:            r.logger,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: r.workers}},
		Workers:           workers,
	})
	if err != nil {
		return out, fmt.Errorf("error creating River's client: %w", err)
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: jobs,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return out, fmt.Errorf("error starting River's client: %w", err)
	}
	timeout := time.After(max(2*time.Minute, time.Duration(jobs)*time.Millisecond))
	var failed int
	for done := 0; done < jobs; {
		select {
		case ev := <-events:
			if ev == nil {
				err = errors.New("the event subscription of River closed")
			} else if ev.Kind != river.EventKindJobCompleted {
				failed++
			}
			done++
		case <-timeout:
			err = errors.New("the burn-down of River did not finish in time")
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	stopCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer stop()
	if stopErr := client.Stop(stopCtx); stopErr != nil && err == nil {
		err = fmt.Errorf("error stopping River's client: %w", stopErr)
	}
	if err != nil {
		return out, err
	}
	if failed > 0 {
		return out, fmt.Errorf("%d River jobs did not complete", failed)
	}
	// The window from River's rows: attempted_at is set by the fetch,
	// finalized_at when the job's outcome is recorded.
	const q = `
SELECT count(*), coalesce(min(attempted_at), now()), coalesce(max(finalized_at), now())
FROM river_job
WHERE state = 'completed'`
	if err := pool.QueryRow(ctx, q).Scan(&out.Completed, &out.FirstStarted, &out.LastFinished); err != nil {
		return out, fmt.Errorf("error reading River's completion window: %w", err)
	}
	return out, nil
}
