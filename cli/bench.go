package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/cli/bench"
	"github.com/wfhq/wf/internal/buildinfo"
	"github.com/wfhq/wf/internal/tracing"
)

// benchCommand is `wf bench`: measure wf on a PostgreSQL of its own (or in a
// new database on the server of the configured URL), print the numbers, and
// with `suite` rewrite BENCHMARKS.md.
func benchCommand() *cli.Command {
	mode := func(m bench.Mode, usage string, extra ...cli.Flag) *cli.Command {
		return &cli.Command{
			Name:   string(m),
			Usage:  usage,
			Flags:  append(benchFlags(), extra...),
			Action: func(c *cli.Context) error { return runBench(c, m) },
		}
	}
	return &cli.Command{
		Name:  "bench",
		Usage: "measure throughput and latency (durable local PostgreSQL unless a database URL is set)",
		Description: "Every run works in a database of its own, dropped at the end. Without a database URL it\n" +
			"starts a local PostgreSQL with durable settings (fsync, synchronous_commit on) in a temporary\n" +
			"folder (or --data-dir). `wf bench suite` runs the standard set and rewrites BENCHMARKS.md.",
		Subcommands: []*cli.Command{
			mode(bench.ModeBurnDown, "enqueue --tasks no-op tasks in bulk, then time the workers until all are COMPLETED"),
			mode(bench.ModeContinuous, "offer --rate tasks/s for --duration while working; report whether the backlog stays flat"),
			mode(bench.ModeLatency, "offer a low --rate, one enqueue per task; report enqueue→start and enqueue→complete percentiles"),
			mode(bench.ModeScale, "time the claim with 0, 1M and 5M finished tasks in older partitions",
				&cli.IntSliceFlag{Name: "rows", Usage: "history sizes to time the claim at (`N,...`; default 0,1000000,5000000)"}),
			mode(bench.ModeIdle, "measure idle wf run instances: resident memory and queries per poll interval"),
			mode(bench.ModeNoisy, "noisy neighbour: tenant A enqueues --tasks while the workers run, then tenants B..E 100 each; B..E's enqueue→start and A's throughput",
				&cli.BoolFlag{Name: "unfair", Usage: "turn fair claiming across tenants off (as fairness.enabled: false)"}),
			mode(bench.ModeOverview, "seed --finished and --pending tasks and time each statement of the dashboard's overview",
				&cli.IntFlag{Name: "finished", Value: 5_000_000, Usage: "COMPLETED tasks to seed over the last 30 days (`N`)"},
				&cli.IntFlag{Name: "pending", Value: 100_000, Usage: "PENDING tasks to seed (`N`)"},
				&cli.IntFlag{Name: "runs", Value: 12, Usage: "timed runs of each statement (`N`)"}),
			mode(bench.ModeIngest, "load --features polygons with wf's ingestion and with ogr2ogr -f PostgreSQL, side by side (GeoPackage in EPSG:32633, GeoJSON), --rounds alternated rounds; median rates and ratios",
				&cli.IntFlag{Name: "features", Value: 100_000, Usage: "polygons per file (`N`; 1000000 for the large table)"},
				&cli.IntFlag{Name: "rounds", Value: 3, Usage: "rounds per side and file (`N`)"}),
			{
				Name:  "chaos",
				Usage: "soak: wf run instances under faults (SIGKILL, leader session ended, PostgreSQL restart); check the invariants",
				Description: "Starts --instances wf run processes on a durable local PostgreSQL of its own. For --duration\n" +
					"it enqueues tasks (some sharing dedup keys), emits events and fires a schedule every 2s, while it\n" +
					"kills a random instance (SIGKILL) every few seconds and restarts it, ends the leader's database\n" +
					"session now and then, and restarts PostgreSQL once. Then it waits for everything to settle and\n" +
					"checks: nothing lost, nothing stuck, re-runs only for work of killed instances and never two\n" +
					"runs at once, every schedule tick exactly once, at most one live task per dedup key.\n" +
					"Exits 1 when any invariant is violated. See RELIABILITY.md.",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "duration", Value: time.Minute, Usage: "how long faults are injected (`DURATION`)"},
					&cli.IntFlag{Name: "instances", Value: 3, Usage: "wf run processes (`N`, at least 2)"},
					&cli.DurationFlag{Name: "kill-every", Value: 4 * time.Second, Usage: "mean interval between SIGKILLs (`DURATION`)"},
					&cli.Uint64Flag{Name: "seed", Usage: "seed of the random faults (`N`; default random, printed)"},
					&cli.StringFlag{Name: "data-dir", Usage: "`FOLDER` of the local PostgreSQL (default a temporary folder)"},
					&cli.BoolFlag{Name: "keep", Usage: "keep the folder: instance logs, the run log, the cluster"},
					&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
				},
				Action: runBenchChaos,
			},
			{
				Name:  "suite",
				Usage: "run the standard set and rewrite the measured part of BENCHMARKS.md",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "markdown", Value: "BENCHMARKS.md", Usage: "the `FILE` to update (between its bench markers)"},
					&cli.StringFlag{Name: "json-out", Usage: "also write every result as JSON to `FILE`"},
					&cli.BoolFlag{Name: "quick", Usage: "a small version of the set (smoke test, minutes less)"},
				},
				Action: runBenchSuite,
			},
		},
	}
}

func benchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "tasks", Aliases: []string{"n"}, Value: 200_000, Usage: "burn-down: how many tasks to enqueue (`N`)"},
		&cli.IntFlag{Name: "slots", Aliases: []string{"workers"}, Value: 100, Usage: "tasks run at once per instance (`N`)"},
		&cli.IntFlag{Name: "instances", Usage: "`N` separate wf run processes; 0 runs one engine inside the bench process"},
		&cli.IntFlag{Name: "payload-bytes", Usage: "size of each task's inputs (`BYTES`)"},
		&cli.StringFlag{Name: "runner", Value: bench.RunnerBuiltin, Usage: "`KIND` of handler: builtin (noop), exec (of true) or http (a loopback endpoint)"},
		&cli.Float64Flag{Name: "rate", Usage: "offered tasks/s (`N`; continuous default 10000, latency 500)"},
		&cli.DurationFlag{Name: "duration", Usage: "how long to offer tasks or watch idle instances (`DURATION`; default 20s, idle 10s)"},
		&cli.DurationFlag{Name: "poll-interval", Usage: "the engines' poll interval (`DURATION`, default 1s)"},
		&cli.IntFlag{Name: "insert-batch", Value: 5000, Usage: "tasks per bulk INSERT (`N`)"},
		&cli.IntFlag{Name: "insert-conns", Value: 2, Usage: "bulk INSERTs at once (`N`)"},
		&cli.StringFlag{Name: "data-dir", Usage: "`FOLDER` of the bench's local PostgreSQL (default a temporary folder; removed at the end when the bench created it, unless --keep)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep the bench database and folder"},
		&cli.BoolFlag{Name: "statements", Usage: "enable pg_stat_statements and print the statements that took the most time"},
		&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the work phase to `FILE` (in-process runs)"},
		&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
	}
}

// benchContext ends on SIGINT/SIGTERM, so an interrupted run still drops
// its database and stops its cluster.
func benchContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
}

func benchConfig(c *cli.Context, m bench.Mode) (bench.Config, error) {
	cfg, err := loadConfig(c)
	if err != nil {
		return bench.Config{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return bench.Config{}, cli.Exit(fmt.Sprintf("error finding the wf executable: %v", err), ExitFailure)
	}
	return bench.Config{
		Mode: m, Tasks: c.Int("tasks"), Slots: c.Int("slots"), Instances: c.Int("instances"),
		PayloadBytes: c.Int("payload-bytes"), Runner: c.String("runner"), Rate: c.Float64("rate"),
		Duration: c.Duration("duration"), PollInterval: c.Duration("poll-interval"),
		InsertBatch: c.Int("insert-batch"), InsertConns: c.Int("insert-conns"), Unfair: c.Bool("unfair"),
		DatabaseURL: cfg.DatabaseURL, DataDir: c.String("data-dir"), Keep: c.Bool("keep"),
		Executable: exe, Statements: c.Bool("statements"), CPUProfile: c.String("cpuprofile"),
		ScaleRows: c.IntSlice("rows"),
		Features:  c.Int("features"), Rounds: c.Int("rounds"),
		OverviewFinished: c.Int("finished"), OverviewPending: c.Int("pending"), OverviewRuns: c.Int("runs"),
		Logger: slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: cfg.SlogLevel()})),
		Stderr: c.App.ErrWriter,
	}, nil
}

func runBench(c *cli.Context, m bench.Mode) error {
	if err := noArguments(c, "bench "+string(m)); err != nil {
		return err
	}
	cfg, err := benchConfig(c, m)
	if err != nil {
		return err
	}
	ctx, cancel := benchContext(c)
	defer cancel()
	// OTEL_* turn tracing on for the in-process engine: its cost.
	tp, stopTracing, err := tracing.FromEnv(ctx, "wf-bench", buildinfo.Read().Version)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	defer stopTracing(context.WithoutCancel(ctx)) //nolint:errcheck
	cfg.TracerProvider = tp
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return cli.Exit(fmt.Sprintf("bench %s: %v", m, err), ExitFailure)
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	res.WriteText(c.App.Writer)
	return nil
}

func runBenchSuite(c *cli.Context) error {
	if err := noArguments(c, "bench suite"); err != nil {
		return err
	}
	cfg, err := benchConfig(c, bench.ModeBurnDown)
	if err != nil {
		return err
	}
	ctx, cancel := benchContext(c)
	defer cancel()
	suite, err := bench.RunSuite(ctx, cfg, c.Bool("quick"), c.App.Writer)
	if err != nil {
		return cli.Exit(fmt.Sprintf("bench suite: %v", err), ExitFailure)
	}
	if path := c.String("json-out"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return cli.Exit(fmt.Sprintf("error writing %s: %v", path, err), ExitFailure)
		}
		werr := writeJSON(f, suite)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return cli.Exit(fmt.Sprintf("error writing %s: %v", path, werr), ExitFailure)
		}
	}
	if path := c.String("markdown"); path != "" {
		if err := bench.UpdateMarkdown(path, suite); err != nil {
			return cli.Exit(err.Error(), ExitFailure)
		}
		fmt.Fprintf(c.App.Writer, "updated %s\n", path)
	}
	return nil
}

func runBenchChaos(c *cli.Context) error {
	if err := noArguments(c, "bench chaos"); err != nil {
		return err
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return cli.Exit(fmt.Sprintf("error finding the wf executable: %v", err), ExitFailure)
	}
	ctx, cancel := benchContext(c)
	defer cancel()
	res, err := bench.RunChaos(ctx, bench.ChaosConfig{
		Duration: c.Duration("duration"), Instances: c.Int("instances"), KillEvery: c.Duration("kill-every"),
		Seed: c.Uint64("seed"), Executable: exe, DataDir: c.String("data-dir"), Keep: c.Bool("keep"),
		Logger: slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: cfg.SlogLevel()})),
	})
	if err != nil {
		return cli.Exit(fmt.Sprintf("bench chaos: %v", err), ExitFailure)
	}
	if c.Bool("json") {
		if err := writeJSON(c.App.Writer, res); err != nil {
			return err
		}
	} else {
		res.WriteText(c.App.Writer)
	}
	if len(res.Violations) > 0 {
		return cli.Exit(fmt.Sprintf("bench chaos: %d invariant violations", len(res.Violations)), ExitFailure)
	}
	return nil
}
