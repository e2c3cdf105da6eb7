// Package bench measures wf end to end on a real PostgreSQL: how fast tasks
// are enqueued in bulk, how fast a backlog of no-op tasks burns down, whether
// a steady offered rate keeps the backlog flat, the enqueue→start latency, the
// claim cost against a large history, and what an idle instance costs. It is
// the logic behind `wf bench`; numbers come from the database's own clock and
// counters (pg_stat_database) and from getrusage, never from guesses.
//
// Each run works in a database of its own: on a local cluster it starts with
// PostgreSQL's durable settings (fsync and synchronous_commit on) when no URL
// is given, or in a new database next to the one a URL names; either is
// dropped at the end.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/internal/localpg"
)

// Mode is what a run measures.
type Mode string

// The modes.
const (
	// ModeBurnDown enqueues Tasks no-op tasks in bulk, then starts the
	// workers and times until all are COMPLETED.
	ModeBurnDown Mode = "burn-down"
	// ModeContinuous offers Rate tasks/s for Duration while the workers run,
	// and reports whether the backlog stays flat.
	ModeContinuous Mode = "continuous"
	// ModeLatency offers a low Rate, one task per enqueue, and reports
	// enqueue→start and enqueue→complete percentiles.
	ModeLatency Mode = "latency"
	// ModeScale times the claim with 0, 1M and 5M finished tasks in older
	// partitions.
	ModeScale Mode = "scale"
	// ModeIdle measures idle `wf run` instances: resident memory and the
	// queries a follower runs per poll interval.
	ModeIdle Mode = "idle"
	// ModeOverview seeds OverviewFinished finished and OverviewPending
	// PENDING tasks and times each statement of the dashboard's overview.
	ModeOverview Mode = "overview"
	// ModeNoisy is the noisy neighbour: with the workers running, tenant A
	// enqueues Tasks in bulk, then tenants B..E 100 each; it reports B..E's
	// enqueue→start and A's throughput (Unfair turns fair claiming off).
	ModeNoisy Mode = "noisy-neighbour"
	// ModeIngest loads Features polygons with wf's ingestion and with
	// `ogr2ogr -f PostgreSQL` side by side, Rounds times each (a GeoPackage
	// in EPSG:32633 through the GDAL path, a GeoJSON file through the
	// GeoJSON path), and reports the median rates and their ratios.
	ModeIngest Mode = "ingest"
)

// Runner kinds a run can use for its task type.
const (
	RunnerBuiltin = "builtin" // the noop Go handler, in process
	RunnerExec    = "exec"    // the command `true`, one process per task
	RunnerHTTP    = "http"    // a POST to a loopback endpoint the bench serves
)

// Config configures one run. Zero fields take the defaults of withDefaults.
type Config struct {
	Mode Mode
	// Tasks is how many tasks a burn-down enqueues. Default 200,000.
	Tasks int
	// Slots is how many tasks run at once in each instance. Default 100,
	// wf run's default.
	Slots int
	// NoClaimAhead turns claiming ahead off in the in-process engine
	// (dispatch.Config.ClaimAhead), for a before/after in one run.
	NoClaimAhead bool
	// Instances is how many separate `wf run` processes work; 0 runs one
	// engine inside the bench process (its CPU and memory are then the bench's).
	Instances int
	// PayloadBytes is the size of each task's inputs (JSON). Default 0: {}.
	PayloadBytes int
	// Runner is builtin, exec or http. Default builtin.
	Runner string
	// Rate is the offered rate in tasks/s (continuous, latency). Defaults
	// 10,000 (continuous) and 500 (latency).
	Rate float64
	// Duration is how long tasks are offered (continuous, latency) or how
	// long an idle instance is watched. Defaults 20s and 10s.
	Duration time.Duration
	// InsertBatch is how many tasks one bulk INSERT carries. Default 5,000.
	InsertBatch int
	// InsertConns is how many bulk INSERTs run at once. Default 2.
	InsertConns int
	// ScaleRows are the history sizes of a scale check. Default 0, 1M, 5M.
	ScaleRows []int
	// ScaleClaims is how many claims each scale step times. Default 200.
	ScaleClaims int
	// ScaleBatch is the claim batch size of a scale check. Default 100.
	ScaleBatch int
	// OverviewFinished and OverviewPending are the finished and PENDING
	// tasks an overview check seeds. Defaults 5,000,000 and 100,000.
	OverviewFinished int
	OverviewPending  int
	// OverviewRuns is how many times each overview statement is timed.
	// Default 12.
	OverviewRuns int
	// PollInterval of the engines (idle followers poll at this rate). Default 1s.
	PollInterval time.Duration
	// Unfair turns the engines' fair claiming across tenants off.
	Unfair bool
	// Features is how many polygons an ingest run's files hold. Default 100,000.
	Features int
	// Rounds is how many times an ingest run loads each file with each
	// side. Default 3.
	Rounds int

	// DatabaseURL names a server to run on; empty starts a local cluster.
	DatabaseURL string
	// DataDir holds the local cluster; empty means a temporary folder.
	DataDir string
	// Keep leaves the bench database (and a local cluster's folder) in place.
	Keep bool
	// Executable is the wf binary that Instances re-executes.
	Executable string
	// Statements enables pg_stat_statements (local cluster only) and
	// reports the statements that took the most time.
	Statements bool
	// CPUProfile, when set, receives a CPU profile of the work phase of an
	// in-process run (go tool pprof).
	CPUProfile string

	// TracerProvider traces the in-process engine and its enqueues
	// (tracing's cost: the OTEL_* variables turn it on for wf bench); nil
	// means off.
	TracerProvider trace.TracerProvider

	// server is the local cluster behind DatabaseURL when a comparison
	// started it (its processes' CPU is measured); nil otherwise.
	server *localpg.Cluster
	// enqueueOnly ends a burn-down after its bulk enqueue (a comparison's
	// CompareConfig.EnqueueOnly).
	enqueueOnly bool

	// Logger receives progress lines; nil discards them.
	Logger *slog.Logger
	// Stderr receives the output of `wf run` instances; nil discards it.
	Stderr io.Writer
}

func (c Config) withDefaults() Config {
	c.Tasks = cmp.Or(c.Tasks, 200_000)
	c.Slots = cmp.Or(c.Slots, 100)
	c.Runner = cmp.Or(c.Runner, RunnerBuiltin)
	switch c.Mode {
	case ModeContinuous:
		c.Rate = cmp.Or(c.Rate, 10_000)
		c.Duration = cmp.Or(c.Duration, 20*time.Second)
	case ModeLatency:
		c.Rate = cmp.Or(c.Rate, 500)
		c.Duration = cmp.Or(c.Duration, 20*time.Second)
	case ModeIdle:
		c.Duration = cmp.Or(c.Duration, 10*time.Second)
		c.Instances = max(c.Instances, 2)
	}
	c.InsertBatch = cmp.Or(c.InsertBatch, 5000)
	c.InsertConns = cmp.Or(c.InsertConns, 2)
	if c.ScaleRows == nil {
		c.ScaleRows = []int{0, 1_000_000, 5_000_000}
	}
	c.ScaleClaims = cmp.Or(c.ScaleClaims, 200)
	c.ScaleBatch = cmp.Or(c.ScaleBatch, 100)
	c.OverviewFinished = cmp.Or(c.OverviewFinished, 5_000_000)
	c.OverviewPending = cmp.Or(c.OverviewPending, 100_000)
	c.OverviewRuns = cmp.Or(c.OverviewRuns, 12)
	c.PollInterval = cmp.Or(c.PollInterval, time.Second)
	c.Features = cmp.Or(c.Features, 100_000)
	c.Rounds = cmp.Or(c.Rounds, 3)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	return c
}

func (c Config) validate() error {
	switch c.Mode {
	case ModeBurnDown, ModeContinuous, ModeLatency, ModeScale, ModeIdle, ModeOverview, ModeNoisy, ModeIngest:
	default:
		return fmt.Errorf("unknown bench mode %q: expected burn-down, continuous, latency, scale, idle, overview, noisy-neighbour or ingest", c.Mode)
	}
	switch c.Runner {
	case RunnerBuiltin, RunnerExec, RunnerHTTP:
	default:
		return fmt.Errorf("unknown runner %q: expected builtin, exec or http", c.Runner)
	}
	switch {
	case c.Tasks < 1:
		return fmt.Errorf("tasks must be at least 1, got %d", c.Tasks)
	case c.Slots < 1:
		return fmt.Errorf("slots must be at least 1, got %d", c.Slots)
	case c.Instances < 0:
		return fmt.Errorf("instances must be 0 (in process) or more, got %d", c.Instances)
	case c.PayloadBytes < 0:
		return fmt.Errorf("payload bytes must be 0 or more, got %d", c.PayloadBytes)
	case c.Rate < 0:
		return fmt.Errorf("rate must be positive, got %g", c.Rate)
	case c.Duration < 0:
		return fmt.Errorf("duration must be positive, got %s", c.Duration)
	case c.OverviewFinished < 0 || c.OverviewPending < 0 || c.OverviewRuns < 1:
		return fmt.Errorf("overview sizes must be 0 or more and runs at least 1, got %d finished, %d pending, %d runs",
			c.OverviewFinished, c.OverviewPending, c.OverviewRuns)
	case c.Features < 1 || c.Rounds < 1:
		return fmt.Errorf("features and rounds must be at least 1, got %d features, %d rounds", c.Features, c.Rounds)
	case c.Instances > 0 && c.Executable == "":
		return errors.New("instances need the wf executable to re-execute")
	case c.CPUProfile != "" && c.Instances > 0:
		return errors.New("a CPU profile is taken of an in-process run only (instances 0)")
	}
	return nil
}

// Run performs one measurement and returns its result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	env, err := setUp(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer env.tearDown()
	res := &Result{
		Mode: cfg.Mode, Runner: cfg.Runner, Slots: cfg.Slots, Instances: cfg.Instances,
		PayloadBytes: cfg.PayloadBytes, Started: time.Now().UTC(),
	}
	switch cfg.Mode {
	case ModeBurnDown:
		err = burnDown(ctx, env, res)
	case ModeContinuous, ModeLatency:
		err = offered(ctx, env, res)
	case ModeScale:
		err = scale(ctx, env, res)
	case ModeIdle:
		err = idle(ctx, env, res)
	case ModeOverview:
		err = overview(ctx, env, res)
	case ModeNoisy:
		err = noisy(ctx, env, res)
	case ModeIngest:
		err = ingestBench(ctx, env, res)
	}
	if err != nil {
		return nil, err
	}
	if err := env.describe(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}
