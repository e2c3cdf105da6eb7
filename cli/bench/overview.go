package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// overviewTenant is the tenant of the one-tenant timings (a catalog-limited
// token's overview); the seed spreads tasks over s_t0…s_t19.
const overviewTenant = "s_t3"

// OverviewResult is what the dashboard's overview costs on a seeded table.
type OverviewResult struct {
	Finished   int `json:"finished"`
	Pending    int `json:"pending"`
	DeadLetter int `json:"dead_letter"`
	// BuildSeconds is how long seeding, vacuuming and analysing took.
	BuildSeconds float64 `json:"build_seconds"`
	// LoadAverage is the machine's 1-minute load average before and after
	// the timings (/proc/loadavg; 0 where it cannot be read).
	LoadAverage [2]float64 `json:"load_average"`
	// Statements are the timings of each overview statement.
	Statements []OverviewStatement `json:"statements"`
	// ReadOverview times the whole read (every statement, one transaction,
	// the estimates), all tenants.
	ReadOverview *Percentiles `json:"read_overview_ms"`
}

// OverviewStatement is one overview statement's timings.
type OverviewStatement struct {
	Name string `json:"name"`
	// Tenant is the one tenant it was limited to, or empty for all.
	Tenant string       `json:"tenant,omitempty"`
	Took   *Percentiles `json:"took_ms"`
	// Buffers is the plan's top "Buffers:" line; Plan the whole EXPLAIN
	// (ANALYZE, BUFFERS) of one run.
	Buffers string `json:"buffers"`
	Plan    string `json:"plan"`
}

// overview seeds OverviewFinished COMPLETED tasks over the last 30 days,
// OverviewPending PENDING ones and 1,000 dead letters (10 types, 20
// tenants), vacuums and analyses as autovacuum would, takes the PENDING
// snapshot as the leader would, then times each overview statement
// OverviewRuns times (after two warm-up runs) for every tenant and for one,
// explains each once, and times the whole ReadOverview.
func overview(ctx context.Context, e *env, res *Result) error {
	cfg, st, log := e.cfg, e.store, e.cfg.Logger
	o := &OverviewResult{Finished: cfg.OverviewFinished, Pending: cfg.OverviewPending, DeadLetter: 1000}
	res.Overview = o
	began := time.Now()
	// The rows' times come from the engine's clock, which a test can
	// move (WF_TEST_NOW_OFFSET), as the database's now() is moved.
	seededAt := clock.Now()
	for _, step := range []struct {
		status wftype.TaskStatus
		n      int
		every  time.Duration
	}{{wftype.StatusCompleted, o.Finished, time.Second}, {wftype.StatusPending, o.Pending, time.Millisecond}, {wftype.StatusDeadLetter, o.DeadLetter, time.Hour}} {
		log.Info("seeding", "status", step.status, "tasks", step.n)
		if err := st.SeedOverviewTasks(ctx, step.status, step.n, step.every, seededAt); err != nil {
			return err
		}
	}
	if err := st.VacuumAnalyzeTasks(ctx); err != nil {
		return err
	}
	if _, err := st.RefreshPendingSnapshot(ctx, nil); err != nil {
		return err
	}
	o.BuildSeconds = time.Since(began).Seconds()
	m, err := startMeter(ctx, e)
	if err != nil {
		return err
	}
	o.LoadAverage[0] = loadAverage()
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range store.OverviewSQL() {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		tenants := [][]string{nil}
		if name == "counts" || name == "throughput" || name == "pending" {
			tenants = append(tenants, []string{overviewTenant})
		}
		for _, tt := range tenants {
			s, err := timeOverviewStatement(ctx, st, name, tt, cfg.OverviewRuns)
			if err != nil {
				return err
			}
			log.Info("overview statement timed", "name", name, "tenant", s.Tenant, "p50_ms", s.Took.P50)
			o.Statements = append(o.Statements, s)
		}
	}
	took := make([]time.Duration, 0, cfg.OverviewRuns)
	for i := range cfg.OverviewRuns + 2 {
		t0 := time.Now()
		if _, err := st.ReadOverview(ctx, store.OverviewParams{PendingMaxAge: time.Hour}); err != nil {
			return err
		}
		if i >= 2 {
			took = append(took, time.Since(t0))
		}
	}
	o.ReadOverview = percentiles(took)
	o.LoadAverage[1] = loadAverage()
	res.CPU = m.cpu()
	return nil
}

// timeOverviewStatement explains one statement once, runs it twice to warm
// up, then times it runs times.
func timeOverviewStatement(ctx context.Context, st *store.Store, name string, tenants []string, runs int) (OverviewStatement, error) {
	s := OverviewStatement{Name: name}
	if len(tenants) == 1 {
		s.Tenant = tenants[0]
	}
	now := clock.Now()
	_, plan, err := st.RunOverviewStatement(ctx, name, tenants, now, true)
	if err != nil {
		return s, err
	}
	s.Plan = plan
	for _, line := range strings.Split(plan, "\n") {
		if b, ok := strings.CutPrefix(strings.TrimSpace(line), "Buffers: "); ok {
			s.Buffers = b
			break
		}
	}
	took := make([]time.Duration, 0, runs)
	for i := range runs + 2 {
		d, _, err := st.RunOverviewStatement(ctx, name, tenants, now, false)
		if err != nil {
			return s, err
		}
		if i >= 2 {
			took = append(took, d)
		}
	}
	s.Took = percentiles(took)
	return s, nil
}

// loadAverage is the machine's 1-minute load average, 0 where
// /proc/loadavg cannot be read.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return 0
	}
	return l
}

// writeOverview prints an overview result.
func writeOverview(w io.Writer, o *OverviewResult) {
	fmt.Fprintf(w, "  seeded           %d finished, %d PENDING, %d DEAD_LETTER tasks in %.0fs; load average %.1f → %.1f\n",
		o.Finished, o.Pending, o.DeadLetter, o.BuildSeconds, o.LoadAverage[0], o.LoadAverage[1])
	for _, s := range o.Statements {
		name := s.Name
		if s.Tenant != "" {
			name += " (one tenant)"
		}
		fmt.Fprintf(w, "  %-28s p50 %8.3f ms p95 %8.3f ms max %8.3f ms  buffers %s\n", name, s.Took.P50, s.Took.P95, s.Took.Max, s.Buffers)
	}
	if o.ReadOverview != nil {
		fmt.Fprintf(w, "  %-28s p50 %8.3f ms p95 %8.3f ms max %8.3f ms\n", "ReadOverview (all)", o.ReadOverview.P50, o.ReadOverview.P95, o.ReadOverview.Max)
	}
}
