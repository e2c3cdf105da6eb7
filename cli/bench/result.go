package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Result is what one run measured. Rates are tasks per second, latencies
// milliseconds, CPU seconds, memory MiB.
type Result struct {
	Mode         Mode      `json:"mode"`
	Runner       string    `json:"runner"`
	Slots        int       `json:"slots"`
	Instances    int       `json:"instances"`
	PayloadBytes int       `json:"payload_bytes"`
	Started      time.Time `json:"started"`

	// Inserted is how many tasks were enqueued, InsertRate how fast (bulk
	// enqueue in burn-down; the achieved offered rate otherwise).
	Inserted   int     `json:"inserted,omitempty"`
	InsertRate float64 `json:"insert_rate,omitempty"`
	// OfferedRate is the rate asked for (continuous, latency).
	OfferedRate float64 `json:"offered_rate,omitempty"`
	// Completed is how many tasks COMPLETED; CompleteRate over WorkSeconds,
	// which runs from the first claim to the last completion (burn-down) or
	// is the offering window (continuous, latency).
	Completed    int     `json:"completed,omitempty"`
	CompleteRate float64 `json:"complete_rate,omitempty"`
	WorkSeconds  float64 `json:"work_seconds,omitempty"`
	// WallSeconds runs from starting the workers to seeing the last task
	// finished, process start-up included.
	WallSeconds float64 `json:"wall_seconds,omitempty"`

	// Latency: StartLatency is enqueue→start, CompleteLatency
	// enqueue→complete (continuous, latency); RunLatency is claim→complete
	// as written in the task row (burn-down: the completion batching delay).
	StartLatency    *Percentiles `json:"start_latency_ms,omitempty"`
	CompleteLatency *Percentiles `json:"complete_latency_ms,omitempty"`
	RunLatency      *Percentiles `json:"run_latency_ms,omitempty"`

	// Noisy (noisy-neighbour): whether claims were fair, and the flooding
	// tenant's throughput; StartLatency is then the other tenants'.
	Fair      *bool   `json:"fair,omitempty"`
	FloodRate float64 `json:"flood_rate,omitempty"`

	// Commits is pg_stat_database.xact_commit over the work phase.
	Commits        int64   `json:"commits,omitempty"`
	CommitsPerTask float64 `json:"commits_per_task,omitempty"`

	// Backlog (continuous): samples of PENDING+ACTIVE, one a second, and
	// whether it stayed flat.
	Backlog     []int   `json:"backlog,omitempty"`
	BacklogFlat *bool   `json:"backlog_flat,omitempty"`
	BacklogMax  int     `json:"backlog_max,omitempty"`
	BacklogRise float64 `json:"backlog_rise_per_s,omitempty"`

	// Scale: claim latency by history size.
	Scale []ScalePoint `json:"scale,omitempty"`

	// Idle: each instance's memory and the queries of followers and leader.
	Idle *IdleResult `json:"idle,omitempty"`

	// Overview: the dashboard's overview statements on a seeded table.
	Overview *OverviewResult `json:"overview,omitempty"`

	// Ingest: wf's ingestion beside ogr2ogr -f PostgreSQL.
	Ingest *IngestResult `json:"ingest,omitempty"`

	// CPU and memory of the work phase.
	CPU CPU `json:"cpu"`

	// Statements are the top statements by time (with --statements).
	Statements []Statement `json:"statements,omitempty"`

	Machine  Machine  `json:"machine"`
	Postgres Postgres `json:"postgres"`
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Count int     `json:"count"`
}

// percentiles computes nearest-rank percentiles of ds.
func percentiles(ds []time.Duration) *Percentiles {
	if len(ds) == 0 {
		return nil
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		i = min(max(i, 0), len(s)-1)
		return ms(s[i])
	}
	return &Percentiles{P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: ms(s[len(s)-1]), Count: len(s)}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }

// CPU is the CPU time and memory a run's processes used in its work phase.
type CPU struct {
	// Bench is the bench process (with an in-process engine, the engine
	// too): CPU, and resident memory at the end of the work phase (the
	// process's peak would carry over from earlier runs of a suite).
	BenchUserSeconds float64 `json:"bench_user_seconds"`
	BenchSysSeconds  float64 `json:"bench_sys_seconds"`
	BenchRSSMB       float64 `json:"bench_rss_mb"`
	// Instances are the `wf run` processes, or the processes an exec runner
	// started (getrusage of children); their peak resident memory is the
	// largest VmHWM of the instances.
	InstancesUserSeconds float64 `json:"instances_user_seconds,omitempty"`
	InstancesSysSeconds  float64 `json:"instances_sys_seconds,omitempty"`
	InstancesPeakRSSMB   float64 `json:"instances_peak_rss_mb,omitempty"`
	// PostgresSeconds is the local server's CPU time (all its processes).
	PostgresSeconds float64 `json:"postgres_seconds,omitempty"`
	// MachineBusy is the share of all cores busy (0..1).
	MachineBusy float64 `json:"machine_busy"`
}

// ScalePoint is the claim latency with a given number of finished tasks in
// older partitions.
type ScalePoint struct {
	FinishedRows int          `json:"finished_rows"`
	Batch        int          `json:"batch"`
	BuildSeconds float64      `json:"build_seconds"`
	Claim        *Percentiles `json:"claim_ms"`
	// Explain is EXPLAIN (ANALYZE, BUFFERS) of one claim.
	Explain string `json:"explain,omitempty"`
}

// IdleResult is what idle instances cost.
type IdleResult struct {
	Followers int `json:"followers"`
	// FollowerQueriesPerPoll is statements per poll interval per follower.
	FollowerQueriesPerPoll float64 `json:"follower_queries_per_poll"`
	// LeaderQueriesPerPoll is the leader's statements per poll interval.
	LeaderQueriesPerPoll float64 `json:"leader_queries_per_poll"`
	// CountedBy is pg_stat_statements or xact_commit.
	CountedBy    string    `json:"counted_by"`
	PollInterval float64   `json:"poll_interval_seconds"`
	Window       float64   `json:"window_seconds"`
	RSSMB        []float64 `json:"rss_mb"`
	MaxRSSMB     float64   `json:"max_rss_mb"`
	// FollowerStatements lists what followers ran in the window.
	FollowerStatements []Statement `json:"follower_statements,omitempty"`
}

// Statement is one line of pg_stat_statements.
type Statement struct {
	Query   string  `json:"query"`
	Calls   int64   `json:"calls"`
	TotalMs float64 `json:"total_ms"`
	MeanMs  float64 `json:"mean_ms"`
	Rows    int64   `json:"rows"`
	WALMB   float64 `json:"wal_mb"`
	Plans   int64   `json:"plans"`
	PlanMs  float64 `json:"plan_ms"`
}

// Machine describes where a run ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	MemoryMB  int64  `json:"memory_mb"`
	Kernel    string `json:"kernel"`
	OS        string `json:"os"`
	GoVersion string `json:"go_version"`
}

// Postgres describes the server a run used.
type Postgres struct {
	Version  string            `json:"version"`
	Local    bool              `json:"local"`
	Settings map[string]string `json:"settings"`
}

// WriteText prints a result for a person.
func (r *Result) WriteText(w io.Writer) {
	if r.Mode == ModeOverview {
		fmt.Fprintf(w, "wf bench %s: the dashboard's overview statements\n", r.Mode)
	} else {
		fmt.Fprintf(w, "wf bench %s: runner %s, %s, %d slots each", r.Mode, r.Runner, r.instancesText(), r.Slots)
		if r.PayloadBytes > 0 {
			fmt.Fprintf(w, ", payload %d bytes", r.PayloadBytes)
		}
		fmt.Fprintln(w)
	}
	if r.Inserted > 0 {
		fmt.Fprintf(w, "  enqueued         %d tasks, %.0f tasks/s\n", r.Inserted, r.InsertRate)
	}
	if r.OfferedRate > 0 {
		fmt.Fprintf(w, "  offered          %.0f tasks/s\n", r.OfferedRate)
	}
	if r.Completed > 0 {
		fmt.Fprintf(w, "  completed        %d tasks, %.0f tasks/s over %.2fs (wall %.2fs)\n", r.Completed, r.CompleteRate, r.WorkSeconds, r.WallSeconds)
	}
	if r.Fair != nil {
		fmt.Fprintf(w, "  fairness         %s; the flooding tenant ran %.0f tasks/s; enqueue→start below is the other tenants'\n",
			map[bool]string{true: "on", false: "off"}[*r.Fair], r.FloodRate)
	}
	writeLatency(w, "enqueue→start   ", r.StartLatency)
	writeLatency(w, "enqueue→complete", r.CompleteLatency)
	writeLatency(w, "claim→complete  ", r.RunLatency)
	if r.Commits > 0 {
		fmt.Fprintf(w, "  commits          %d, %.4f per task\n", r.Commits, r.CommitsPerTask)
	}
	if r.BacklogFlat != nil {
		fmt.Fprintf(w, "  backlog          flat=%t max %d, rise %.1f tasks/s, samples %v\n", *r.BacklogFlat, r.BacklogMax, r.BacklogRise, r.Backlog)
	}
	for _, p := range r.Scale {
		fmt.Fprintf(w, "  claim of %d with %9d finished rows: p50 %.3f ms p95 %.3f ms p99 %.3f ms (built in %.0fs)\n",
			p.Claim.Count, p.FinishedRows, p.Claim.P50, p.Claim.P95, p.Claim.P99, p.BuildSeconds)
	}
	if ratio, ok := r.ScaleRatio(); ok {
		fmt.Fprintf(w, "  claim p50 with the most history / none: %.2f×\n", ratio)
	}
	if r.Idle != nil {
		fmt.Fprintf(w, "  idle             %d followers: %.2f queries per poll interval each; leader %.2f (by %s over %.0fs)\n",
			r.Idle.Followers, r.Idle.FollowerQueriesPerPoll, r.Idle.LeaderQueriesPerPoll, r.Idle.CountedBy, r.Idle.Window)
		fmt.Fprintf(w, "  idle RSS         %v MiB (max %.1f)\n", r.Idle.RSSMB, r.Idle.MaxRSSMB)
	}
	if r.Overview != nil {
		writeOverview(w, r.Overview)
	}
	if r.Ingest != nil {
		writeIngest(w, r.Ingest)
	}
	c := r.CPU
	fmt.Fprintf(w, "  cpu              bench %.2fs user %.2fs sys, RSS %.1f MiB", c.BenchUserSeconds, c.BenchSysSeconds, c.BenchRSSMB)
	if r.Instances > 0 {
		fmt.Fprintf(w, "; instances %.2fs user %.2fs sys, peak RSS %.1f MiB", c.InstancesUserSeconds, c.InstancesSysSeconds, c.InstancesPeakRSSMB)
	}
	if c.PostgresSeconds > 0 {
		fmt.Fprintf(w, "; postgres %.2fs", c.PostgresSeconds)
	}
	fmt.Fprintf(w, "; machine %.0f%% busy\n", c.MachineBusy*100)
	for _, s := range r.Statements {
		fmt.Fprintf(w, "  stmt %8d calls %9.1f ms total %7.3f ms mean %8.1f MB WAL %6d plans %7.1f ms planning  %s\n",
			s.Calls, s.TotalMs, s.MeanMs, s.WALMB, s.Plans, s.PlanMs, oneLine(s.Query, 80))
	}
	fmt.Fprintf(w, "  machine          %d CPUs (%s), %d MiB, PostgreSQL %s\n", r.Machine.CPUs, r.Machine.CPUModel, r.Machine.MemoryMB, shortVersion(r.Postgres.Version))
	fmt.Fprintf(w, "  settings         %s\n", settingsLine(r.Postgres.Settings))
}

func (r *Result) instancesText() string {
	if r.Instances == 0 {
		return "engine in process"
	}
	return fmt.Sprintf("%d wf run instances", r.Instances)
}

// ScaleRatio is the claim p50 with the most history over that with none.
func (r *Result) ScaleRatio() (float64, bool) {
	if len(r.Scale) < 2 || r.Scale[0].Claim == nil || r.Scale[0].Claim.P50 == 0 {
		return 0, false
	}
	last := r.Scale[len(r.Scale)-1]
	return last.Claim.P50 / r.Scale[0].Claim.P50, true
}

func writeLatency(w io.Writer, label string, p *Percentiles) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "  %s p50 %.2f ms  p95 %.2f ms  p99 %.2f ms  max %.2f ms (%d tasks)\n", label, p.P50, p.P95, p.P99, p.Max, p.Count)
}

func settingsLine(s map[string]string) string {
	var parts []string
	for _, k := range reportedSettings {
		if v, ok := s[k]; ok && v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// shortVersion turns "PostgreSQL 15.8 (Debian …) on x86_64…" into "15.8".
func shortVersion(v string) string {
	f := strings.Fields(v)
	if len(f) >= 2 && f[0] == "PostgreSQL" {
		return f[1]
	}
	return v
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
