// Command riverbench measures wf beside River on one PostgreSQL server in one
// run: the burn-down of N no-op jobs at River's benchmark settings (2,000
// workers) and wf's at its default 100 slots (and other slot counts), and
// both bulk enqueues (River's InsertManyFast, which uses COPY, and wf's),
// printing jobs/s and wf's ratios to River. It is a module of its own, so
// River never enters wf's go.mod or binary; `make bench` runs it.
//
//	cd cli/bench/riverbench && go run . --markdown ../../../BENCHMARKS.md
//
// Without --database-url it starts a local PostgreSQL with durable settings
// in a temporary folder, as `wf bench` does. River's tables live in
// databases of their own (one per run), so River never touches wf's.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/wfhq/wf/cli/bench"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses the arguments, runs the comparison and returns the exit code:
// 0 success, 1 failure, 2 usage.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("riverbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 200_000, "no-op tasks (and River jobs) each burn-down works")
	rounds := fs.Int("rounds", 1, "how many times to run the whole set (the report takes medians)")
	slots := fs.String("slots", "100,1000,2000", "wf's slot counts, comma separated (the first is wf run's default)")
	workers := fs.Int("river-workers", riverWorkers, "River's MaxWorkers (its benchmark uses 2,000)")
	batch := fs.Int("insert-batch", 5000, "jobs per bulk insert, for both")
	conns := fs.Int("insert-conns", 2, "bulk inserts at once, for both")
	dbURL := fs.String("database-url", "", "a PostgreSQL server to run on (a new database per run); empty starts a durable local one")
	dataDir := fs.String("data-dir", "", "folder of the local PostgreSQL (default a temporary folder)")
	markdown := fs.String("markdown", "", "rewrite the comparison's generated part of this FILE (BENCHMARKS.md)")
	jsonOut := fs.String("json-out", "", "write the comparison as JSON to this FILE")
	baseline := fs.Bool("baseline", false, "also run wf at the first --slots with claiming ahead off (a before/after in one run)")
	enqueueOnly := fs.Bool("enqueue-only", false, "measure the bulk enqueues alone: River's and wf's in each round, the first alternating, no burn-down")
	verbose := fs.Bool("v", false, "log progress to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "riverbench takes no arguments, got %q\n", fs.Arg(0))
		return 2
	}
	wfSlots, err := parseSlots(*slots)
	if err != nil {
		fmt.Fprintf(stderr, "--slots: %v\n", err)
		return 2
	}
	if *enqueueOnly && (*markdown != "" || *baseline) {
		fmt.Fprintln(stderr, "--enqueue-only measures no burn-down: it takes neither --markdown nor --baseline")
		return 2
	}
	if *workers < 1 {
		fmt.Fprintf(stderr, "--river-workers must be at least 1, got %d\n", *workers)
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rival := &riverRival{workers: *workers, logger: logger.With("rival", "river")}
	c, err := bench.Compare(ctx, bench.CompareConfig{
		Tasks: *tasks, Rounds: *rounds, WfSlots: wfSlots, Baseline: *baseline, InsertBatch: *batch, InsertConns: *conns, EnqueueOnly: *enqueueOnly,
		DatabaseURL: *dbURL, DataDir: *dataDir, Logger: logger,
	}, rival, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "riverbench: %v\n", err)
		return 1
	}
	c.WriteText(stdout)
	if *markdown != "" {
		if err := bench.UpdateCompareMarkdown(*markdown, c); err != nil {
			fmt.Fprintf(stderr, "riverbench: %v\n", err)
			return 1
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(c, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "riverbench: error writing %s: %v\n", *jsonOut, err)
			return 1
		}
	}
	return 0
}

// parseSlots reads "100,1000,2000".
func parseSlots(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("expected slot counts of at least 1, comma separated, got %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}
