package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/store"
)

// Rival is another job queue measured beside wf on the same PostgreSQL
// server in the same run (Compare). River's implementation lives in
// cli/bench/riverbench, a Go module of its own, so that River never becomes a
// dependency of wf's module or binary.
type Rival interface {
	// Name names the queue and its version, e.g. "River v0.51.2".
	Name() string
	// Settings says how the rival works the jobs, e.g. its worker count.
	Settings() string
	// Prepare installs the rival's tables in the empty database at dbURL.
	Prepare(ctx context.Context, dbURL string) error
	// Enqueue inserts jobs no-op jobs in bulk, batch jobs a statement and
	// conns statements at once.
	Enqueue(ctx context.Context, dbURL string, jobs, batch, conns int) error
	// Work starts the rival's workers, waits until the jobs are done and
	// stops them.
	Work(ctx context.Context, dbURL string, jobs int) (RivalWork, error)
}

// RivalWork is what a rival's burn-down measured, read from its job rows.
type RivalWork struct {
	// Completed is how many jobs ended completed.
	Completed int
	// FirstStarted and LastFinished are the first job's start and the last
	// job's end, as the rows record them.
	FirstStarted, LastFinished time.Time
}

// CompareConfig configures a side-by-side run. Zero fields take defaults.
type CompareConfig struct {
	// Tasks is how many no-op tasks (and rival jobs) each burn-down works.
	// Default 200,000.
	Tasks int
	// Rounds repeats the whole set; the report takes each run's median.
	// Default 1.
	Rounds int
	// WfSlots are the slot counts of wf's burn-downs; the first is wf run's
	// default. Default 100, 1,000 and 2,000.
	WfSlots []int
	// Baseline adds a run of wf at WfSlots[0] with claiming ahead off
	// (the dispatcher as it was without it), for a before/after against
	// the rival in one run.
	Baseline bool
	// InsertBatch and InsertConns shape both bulk enqueues. Defaults 5,000
	// and 2.
	InsertBatch, InsertConns int
	// EnqueueOnly measures the bulk enqueues alone: each round runs the
	// rival's and wf's (one, whatever WfSlots), the first alternating
	// between rounds, and no burn-down; only the enqueue ratio is given,
	// and each run's CPU seconds are its enqueue's.
	EnqueueOnly bool
	// DatabaseURL names the server; empty starts a durable local cluster.
	DatabaseURL string
	// DataDir holds the local cluster; empty means a temporary folder.
	DataDir string
	// Logger receives progress lines; nil discards them.
	Logger *slog.Logger
}

func (c CompareConfig) withDefaults() CompareConfig {
	c.Tasks = cmp.Or(c.Tasks, 200_000)
	c.Rounds = cmp.Or(c.Rounds, 1)
	if len(c.WfSlots) == 0 {
		c.WfSlots = []int{100, 1000, 2000}
	}
	c.InsertBatch = cmp.Or(c.InsertBatch, 5000)
	c.InsertConns = cmp.Or(c.InsertConns, 2)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

func (c CompareConfig) validate() error {
	switch {
	case c.Tasks < 1:
		return fmt.Errorf("tasks must be at least 1, got %d", c.Tasks)
	case c.Rounds < 1:
		return fmt.Errorf("rounds must be at least 1, got %d", c.Rounds)
	case c.InsertBatch < 1 || c.InsertConns < 1:
		return fmt.Errorf("insert batch and connections must be at least 1, got %d and %d", c.InsertBatch, c.InsertConns)
	}
	for _, s := range c.WfSlots {
		if s < 1 {
			return fmt.Errorf("wf slots must be at least 1, got %d", s)
		}
	}
	return nil
}

// Comparison is what a side-by-side run measured.
type Comparison struct {
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Tasks    int       `json:"tasks"`
	Rounds   int       `json:"rounds"`
	Rival    string    `json:"rival"`
	Settings string    `json:"rival_settings"`
	// LoadBefore and LoadAfter are the machine's 1-minute load averages
	// when the run started and ended.
	LoadBefore float64         `json:"load_before"`
	LoadAfter  float64         `json:"load_after"`
	Runs       []ComparedRun   `json:"runs"`
	Ratios     []ComparedRatio `json:"ratios"`
	Machine    Machine         `json:"machine"`
	Postgres   Postgres        `json:"postgres"`
}

// ComparedRun is one burn-down of the comparison: its bulk enqueue, then
// its work.
type ComparedRun struct {
	// Name says who ran with what, e.g. "wf, 100 slots (wf run's default)".
	Name  string `json:"name"`
	Round int    `json:"round"`
	// Wf is true for wf's runs, Slots their slot count; Baseline marks
	// the run with claiming ahead off (CompareConfig.Baseline).
	Wf       bool `json:"wf"`
	Slots    int  `json:"slots,omitempty"`
	Baseline bool `json:"baseline,omitempty"`
	// EnqueueRate is the bulk enqueue's tasks/s, CompleteRate the
	// burn-down's (first start to last finish, from the rows).
	EnqueueRate  float64 `json:"enqueue_rate"`
	CompleteRate float64 `json:"complete_rate"`
	Completed    int     `json:"completed"`
	// PostgresSeconds and BenchSeconds are the CPU of the work phase (of
	// the enqueue with CompareConfig.EnqueueOnly): the local server's
	// processes and the bench process (the engine, or the rival's client,
	// runs inside it).
	PostgresSeconds float64 `json:"postgres_seconds"`
	BenchSeconds    float64 `json:"bench_seconds"`
}

// ComparedRatio is wf's median over the rival's median for one measure.
type ComparedRatio struct {
	Name  string  `json:"name"`
	Goal  float64 `json:"goal"`
	Wf    float64 `json:"wf"`
	Rival float64 `json:"rival"`
	Ratio float64 `json:"ratio"`
	Met   bool    `json:"met"`
}

// Compare runs the rival's burn-down and wf's at each of cfg.WfSlots on one
// PostgreSQL server, each in a fresh database of its own (dropped after),
// Rounds times in turn, printing each run to w as it ends, and returns the
// runs with wf's ratios to the rival.
func Compare(ctx context.Context, cfg CompareConfig, rival Rival, w io.Writer) (*Comparison, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Comparison{Started: time.Now().UTC(), Tasks: cfg.Tasks, Rounds: cfg.Rounds,
		Rival: rival.Name(), Settings: rival.Settings(), LoadBefore: loadAverage()}
	// One server for every run: the wf runs create their databases next to
	// the URL's, the rival's are made here.
	server, err := setUpServer(ctx, Config{Mode: ModeBurnDown, DatabaseURL: cfg.DatabaseURL, DataDir: cfg.DataDir,
		Logger: cfg.Logger}.withDefaults())
	if err != nil {
		return nil, err
	}
	defer server.tearDown()
	for round := 1; round <= cfg.Rounds; round++ {
		if cfg.EnqueueOnly {
			if err := c.compareEnqueues(ctx, w, server, cfg, rival, round); err != nil {
				return nil, err
			}
			continue
		}
		run, err := compareRival(ctx, server, cfg, rival)
		if err != nil {
			return nil, fmt.Errorf("error running %s (round %d): %w", rival.Name(), round, err)
		}
		run.Round = round
		c.add(w, run)
		for i, slots := range cfg.WfSlots {
			name := fmt.Sprintf("wf, %d slots", slots)
			if i == 0 && slots == (Config{}).withDefaults().Slots {
				name += " (wf run's default)"
			}
			if err := c.runWf(ctx, w, server, cfg, ComparedRun{Name: name, Round: round, Wf: true, Slots: slots}); err != nil {
				return nil, err
			}
		}
		if cfg.Baseline {
			slots := cfg.WfSlots[0]
			run := ComparedRun{Name: fmt.Sprintf("wf, %d slots, claiming ahead off", slots), Round: round, Wf: true, Slots: slots, Baseline: true}
			if err := c.runWf(ctx, w, server, cfg, run); err != nil {
				return nil, err
			}
		}
	}
	c.LoadAfter = loadAverage()
	c.Seconds = time.Since(c.Started).Seconds()
	c.Ratios = c.ratios(cfg.WfSlots[0])
	if cfg.EnqueueOnly {
		c.Ratios = c.Ratios[2:3] // no burn-down ran
	}
	return c, nil
}

// compareEnqueues runs one round of CompareConfig.EnqueueOnly: the rival's
// bulk enqueue and wf's, each in a fresh database, the rival first in odd
// rounds, so that a load that changes during the run favours neither.
func (c *Comparison) compareEnqueues(ctx context.Context, w io.Writer, server *env, cfg CompareConfig, rival Rival, round int) error {
	for i := range 2 {
		if (i == 0) == (round%2 == 1) {
			run, err := compareRival(ctx, server, cfg, rival)
			if err != nil {
				return fmt.Errorf("error running %s (round %d): %w", rival.Name(), round, err)
			}
			run.Round = round
			c.add(w, run)
			continue
		}
		run := ComparedRun{Name: "wf, bulk enqueue", Round: round, Wf: true, Slots: cfg.WfSlots[0]}
		if err := c.runWf(ctx, w, server, cfg, run); err != nil {
			return err
		}
	}
	return nil
}

// runWf runs one of wf's burn-downs on the server and records it.
func (c *Comparison) runWf(ctx context.Context, w io.Writer, server *env, cfg CompareConfig, run ComparedRun) error {
	res, err := Run(ctx, Config{Mode: ModeBurnDown, Tasks: cfg.Tasks, Slots: run.Slots, NoClaimAhead: run.Baseline,
		InsertBatch: cfg.InsertBatch, InsertConns: cfg.InsertConns, DatabaseURL: server.adminURL, server: server.cluster,
		enqueueOnly: cfg.EnqueueOnly, Logger: cfg.Logger})
	if err != nil {
		return fmt.Errorf("error running %s (round %d): %w", run.Name, run.Round, err)
	}
	run.EnqueueRate, run.CompleteRate, run.Completed = res.InsertRate, res.CompleteRate, res.Completed
	run.PostgresSeconds, run.BenchSeconds = res.CPU.PostgresSeconds, res.CPU.BenchUserSeconds+res.CPU.BenchSysSeconds
	c.add(w, run)
	c.Machine, c.Postgres = res.Machine, res.Postgres
	return nil
}

// add records a run and prints it.
func (c *Comparison) add(w io.Writer, r ComparedRun) {
	c.Runs = append(c.Runs, r)
	fmt.Fprintf(w, "%-40s round %d: enqueued %8.0f/s, completed %8.0f/s (%d tasks; CPU s: PostgreSQL %.1f, bench %.1f)\n",
		r.Name, r.Round, r.EnqueueRate, r.CompleteRate, r.Completed, r.PostgresSeconds, r.BenchSeconds)
}

// compareRival runs the rival's bulk enqueue and burn-down in a database of
// its own on the server, measuring the work phase's CPU as wf's runs do.
func compareRival(ctx context.Context, server *env, cfg CompareConfig, rival Rival) (ComparedRun, error) {
	run := ComparedRun{Name: fmt.Sprintf("%s, %s", rival.Name(), rival.Settings())}
	dbURL, drop, err := server.scratchDatabase(ctx, "wf_bench_rival_")
	if err != nil {
		return run, err
	}
	defer drop()
	if err := rival.Prepare(ctx, dbURL); err != nil {
		return run, err
	}
	server.checkpointServer(ctx)
	cfg.Logger.Info("rival: enqueueing", "rival", rival.Name(), "jobs", cfg.Tasks)
	self, pg := selfUsage(), processTreeCPU(server.postmasterPID())
	start := time.Now()
	if err := rival.Enqueue(ctx, dbURL, cfg.Tasks, cfg.InsertBatch, cfg.InsertConns); err != nil {
		return run, err
	}
	run.EnqueueRate = float64(cfg.Tasks) / time.Since(start).Seconds()
	if cfg.EnqueueOnly { // the CPU of the enqueue, not of a burn-down
		after := selfUsage()
		run.BenchSeconds = (after.User - self.User + after.Sys - self.Sys).Seconds()
		run.PostgresSeconds = (processTreeCPU(server.postmasterPID()) - pg).Seconds()
		return run, nil
	}
	self, pg = selfUsage(), processTreeCPU(server.postmasterPID())
	cfg.Logger.Info("rival: burning down", "rival", rival.Name())
	work, err := rival.Work(ctx, dbURL, cfg.Tasks)
	if err != nil {
		return run, err
	}
	after := selfUsage()
	run.BenchSeconds = (after.User - self.User + after.Sys - self.Sys).Seconds()
	run.PostgresSeconds = (processTreeCPU(server.postmasterPID()) - pg).Seconds()
	if work.Completed != cfg.Tasks {
		return run, fmt.Errorf("%s completed %d of %d jobs", rival.Name(), work.Completed, cfg.Tasks)
	}
	run.Completed = work.Completed
	if d := work.LastFinished.Sub(work.FirstStarted).Seconds(); d > 0 {
		run.CompleteRate = float64(work.Completed) / d
	}
	return run, nil
}

// scratchDatabase creates an empty database on the server and returns its
// URL and a function that drops it.
func (e *env) scratchDatabase(ctx context.Context, prefix string) (string, func(), error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, e.adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("error connecting to PostgreSQL for the bench: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if err := store.New(admin).CreateDatabase(ctx, name); err != nil {
		return "", nil, err
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, e.adminURL)
		if err == nil {
			err = store.New(conn).DropDatabase(ctx, name)
			conn.Close(ctx)
		}
		if err != nil {
			e.cfg.Logger.Warn("error dropping a bench database", "database", name, "err", err)
		}
	}
	url, err := withDatabase(e.adminURL, name)
	if err != nil {
		drop()
		return "", nil, err
	}
	return url, drop, nil
}

// checkpointServer forces a checkpoint through the admin connection, as
// wf's runs take one before theirs (env.checkpoint).
func (e *env) checkpointServer(ctx context.Context) {
	conn, err := pgx.Connect(ctx, e.adminURL)
	if err != nil {
		e.cfg.Logger.Warn("no checkpoint before the run", "err", err)
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	e.checkpoint(ctx, store.New(conn))
}

// ratios compares wf's medians with the rival's: the burn-down at wf run's
// default slots and at wf's best setting, and the bulk enqueue.
func (c *Comparison) ratios(defaultSlots int) []ComparedRatio {
	var rivalDone, rivalEnq, wfEnq, baseline []float64
	wfDone := map[int][]float64{}
	for _, r := range c.Runs {
		if r.Baseline {
			baseline = append(baseline, r.CompleteRate)
			continue
		}
		if r.Wf {
			wfDone[r.Slots] = append(wfDone[r.Slots], r.CompleteRate)
			wfEnq = append(wfEnq, r.EnqueueRate)
			continue
		}
		rivalDone, rivalEnq = append(rivalDone, r.CompleteRate), append(rivalEnq, r.EnqueueRate)
	}
	best, bestSlots := 0.0, 0
	for _, slots := range slices.Sorted(maps.Keys(wfDone)) {
		if m := median(wfDone[slots]); m > best {
			best, bestSlots = m, slots
		}
	}
	mk := func(name string, goal, wf, rival float64) ComparedRatio {
		r := ComparedRatio{Name: name, Goal: goal, Wf: wf, Rival: rival}
		if rival > 0 {
			r.Ratio = wf / rival
		}
		r.Met = goal > 0 && r.Ratio >= goal
		return r
	}
	rd := median(rivalDone)
	out := []ComparedRatio{
		mk(fmt.Sprintf("burn-down: wf at %d slots (default) / %s", defaultSlots, c.Rival), 1.0, median(wfDone[defaultSlots]), rd),
		mk(fmt.Sprintf("burn-down: wf's best (%d slots) / %s", bestSlots, c.Rival), 1.5, best, rd),
		mk(fmt.Sprintf("bulk enqueue: wf / %s", c.Rival), 1.0, median(wfEnq), median(rivalEnq)),
	}
	if len(baseline) > 0 {
		// The baseline has no goal: it shows what claiming ahead changed.
		out = append(out, mk(fmt.Sprintf("burn-down: wf at %d slots, claiming ahead off / %s", defaultSlots, c.Rival), 0, median(baseline), rd))
	}
	return out
}

// median of v (the mean of the middle two for an even count); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
