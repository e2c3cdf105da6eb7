package bench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Suite is the standard set of runs (`make bench`) and how they compare
// with the targets.
type Suite struct {
	Started  time.Time  `json:"started"`
	Seconds  float64    `json:"seconds"`
	Runs     []SuiteRun `json:"runs"`
	Targets  []Target   `json:"targets"`
	Machine  Machine    `json:"machine"`
	Postgres Postgres   `json:"postgres"`
}

// SuiteRun is one run of the suite.
type SuiteRun struct {
	Name   string  `json:"name"`
	Result *Result `json:"result,omitempty"`
	Error  string  `json:"error,omitempty"`
	cfg    Config
}

// Target is one goal and what the suite measured against it.
type Target struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Measured string  `json:"measured"`
	Value    float64 `json:"value"`
	Met      bool    `json:"met"`
}

// standardRuns is the suite: the targets' runs first, then the other runners
// and shapes. quick shrinks every run for a smoke test.
func standardRuns(base Config, quick bool) []SuiteRun {
	type run struct {
		name string
		cfg  Config
	}
	n := func(full, small int) int {
		if quick {
			return small
		}
		return full
	}
	d := func(full, small time.Duration) time.Duration {
		if quick {
			return small
		}
		return full
	}
	mk := func(mut func(*Config)) Config {
		c := base
		c.Mode, c.Tasks, c.Slots, c.Instances, c.Runner, c.Rate, c.Duration = ModeBurnDown, 0, 0, 0, "", 0, 0
		c.PayloadBytes, c.ScaleRows, c.CPUProfile, c.Statements, c.Unfair = 0, nil, "", false, false
		mut(&c)
		return c
	}
	runs := []run{
		{"burn-down", mk(func(c *Config) { c.Tasks, c.Slots = n(200_000, 20_000), 1000 })},
		{"burn-down, wf run's default 100 slots", mk(func(c *Config) { c.Tasks = n(200_000, 20_000) })},
		{"burn-down, 2 wf run instances", mk(func(c *Config) { c.Tasks, c.Slots, c.Instances = n(200_000, 20_000), 500, 2 })},
		{"burn-down, 1 KiB inputs", mk(func(c *Config) { c.Tasks, c.Slots, c.PayloadBytes = n(100_000, 10_000), 1000, 1024 })},
		{"burn-down, http runner", mk(func(c *Config) { c.Tasks, c.Slots, c.Runner = n(50_000, 5_000), 200, RunnerHTTP })},
		{"burn-down, exec runner (`true`)", mk(func(c *Config) { c.Tasks, c.Runner, c.Slots = n(3_000, 300), RunnerExec, 16 })},
		{"continuous 10,000/s", mk(func(c *Config) {
			c.Mode, c.Rate, c.Duration = ModeContinuous, 10_000, d(20*time.Second, 3*time.Second)
		})},
		{"latency 500/s (leader)", mk(func(c *Config) {
			c.Mode, c.Rate, c.Duration = ModeLatency, 500, d(20*time.Second, 3*time.Second)
		})},
		{"scale", mk(func(c *Config) {
			c.Mode = ModeScale
			if quick {
				c.ScaleRows = []int{0, 20_000}
			}
		})},
		{"ingest vs ogr2ogr", mk(func(c *Config) { c.Mode, c.Features, c.Rounds = ModeIngest, n(100_000, 5_000), n(3, 1) })},
		{"idle", mk(func(c *Config) { c.Mode, c.Instances, c.Duration = ModeIdle, 2, d(10*time.Second, 3*time.Second) })},
	}
	for k := 1; k <= n(noisyRounds, 1); k++ {
		for _, fair := range noisyOrder(k) {
			runs = append(runs, run{noisyRunName(fair, k), mk(func(c *Config) {
				c.Mode, c.Tasks, c.Unfair = ModeNoisy, n(100_000, 10_000), !fair
			})})
		}
	}
	out := make([]SuiteRun, len(runs))
	for i, r := range runs {
		out[i] = SuiteRun{Name: r.name, cfg: r.cfg}
	}
	return out
}

// RunSuite runs the standard set one run after the other, each on a fresh
// server, printing each result to w as it comes.
func RunSuite(ctx context.Context, base Config, quick bool, w io.Writer) (*Suite, error) {
	if base.Logger == nil {
		base.Logger = Config{}.withDefaults().Logger
	}
	s := &Suite{Started: time.Now().UTC()}
	runs := standardRuns(base, quick)
	for i := range runs {
		r := &runs[i]
		base.Logger.Info("suite: running", "run", r.Name)
		res, err := Run(ctx, r.cfg)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			r.Error = err.Error()
			fmt.Fprintf(w, "%s: error: %v\n\n", r.Name, err)
			continue
		}
		r.Result = res
		fmt.Fprintf(w, "%s:\n", r.Name)
		res.WriteText(w)
		fmt.Fprintln(w)
		if s.Postgres.Version == "" {
			// The first run's server: later ones (idle) may preload extensions.
			s.Machine, s.Postgres = res.Machine, res.Postgres
		}
	}
	s.Runs = runs
	s.Seconds = time.Since(s.Started).Seconds()
	s.Targets = targets(s)
	return s, nil
}

func (s *Suite) run(name string) *Result {
	for _, r := range s.Runs {
		if r.Name == name && r.Result != nil {
			return r.Result
		}
	}
	return nil
}

// targets compares the suite's runs with the goals of issue 8.
func targets(s *Suite) []Target {
	var out []Target
	add := func(name, goal string, r *Result, value func(*Result) (float64, bool), format string, met func(float64) bool) {
		t := Target{Name: name, Goal: goal, Measured: "not measured"}
		if r != nil {
			if v, ok := value(r); ok {
				t.Value, t.Measured, t.Met = v, fmt.Sprintf(format, v), met(v)
			}
		}
		out = append(out, t)
	}
	bd := s.run("burn-down")
	add("burn-down of 200,000 no-op tasks", "≥ 30,000 tasks/s completed", bd,
		func(r *Result) (float64, bool) { return r.CompleteRate, r.Completed > 0 }, "%.0f tasks/s", func(v float64) bool { return v >= 30_000 })
	add("bulk enqueue", "≥ 60,000 tasks/s", bd,
		func(r *Result) (float64, bool) { return r.InsertRate, r.Inserted > 0 }, "%.0f tasks/s", func(v float64) bool { return v >= 60_000 })
	add("database commits per task in burn-down", "≤ 0.1", bd,
		func(r *Result) (float64, bool) { return r.CommitsPerTask, r.Completed > 0 }, "%.4f", func(v float64) bool { return v <= 0.1 })
	add("enqueue→start p50 on the leader at 500 tasks/s", "≤ 5 ms", s.run("latency 500/s (leader)"),
		func(r *Result) (float64, bool) {
			if r.StartLatency == nil {
				return 0, false
			}
			return r.StartLatency.P50, true
		}, "%.2f ms", func(v float64) bool { return v <= 5 })
	add("claim latency with 5M finished rows / with none", "≤ 1.5×", s.run("scale"),
		func(r *Result) (float64, bool) { return r.ScaleRatio() }, "%.2f×", func(v float64) bool { return v <= 1.5 })
	idle := s.run("idle")
	add("`wf run` idle resident memory", "≤ 40 MB", idle,
		idleValue(func(i *IdleResult) float64 { return i.MaxRSSMB }), "%.1f MiB", func(v float64) bool { return v <= 40 })
	add("queries per poll interval per idle follower", "≤ 1", idle,
		idleValue(func(i *IdleResult) float64 { return i.FollowerQueriesPerPoll }), "%.2f", func(v float64) bool { return v <= 1 })
	ing := s.run("ingest vs ogr2ogr")
	for k, name := range []string{"GeoPackage in EPSG:32633, GDAL path", "GeoJSON path"} {
		add("ingestion rate / ogr2ogr -f PostgreSQL's, "+name, "≥ 1.0× (median of alternated rounds)", ing,
			func(r *Result) (float64, bool) {
				if r.Ingest == nil || len(r.Ingest.Paths) <= k {
					return 0, false
				}
				return r.Ingest.Paths[k].Ratio, true
			}, "%.2f×", func(v float64) bool { return v >= 1 })
	}
	addNoisyTargets(s, add)
	return out
}

// idleValue reads a target's value from an idle run's result with f; a
// result without one has none.
func idleValue(f func(*IdleResult) float64) func(*Result) (float64, bool) {
	return func(r *Result) (float64, bool) {
		if r.Idle == nil {
			return 0, false
		}
		return f(r.Idle), true
	}
}
