// Package metrics holds wf's Prometheus metrics: the engine's claims and
// outcomes (it is the engine's execution.Observer), queue depth and row
// estimates read from the store, and the HTTP API's requests. It lives in
// the engine so that the engine never calls up into the HTTP package; the
// API serves it at /metrics.
package metrics

import (
	"cmp"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/buildinfo"
	"github.com/wfhq/wf/wftype"
)

// Metrics are wf's Prometheus metrics, on a registry of their own (never the
// global default one). It implements execution.Observer, so the engine
// reports its claims and outcomes to it; the HTTP API reports its requests
// (ObserveRequest), synchronous runs and remote workers' outcomes.
//
// Queue depth (wf_queue_depth) counts PENDING and ACTIVE tasks by type from
// the partial indexes on live rows only: its cost grows with the live tasks,
// never with the finished rows that make up the table. It is read at most
// once per DepthTTL whatever the number of scrapers, under a statement
// timeout. The rows of every status (wf_task_rows_estimate) come from the
// planner's statistics, at no cost.
type Metrics struct {
	cfg Config
	reg *prometheus.Registry

	claimed      *prometheus.CounterVec
	finished     *prometheus.CounterVec
	claimBatch   prometheus.Histogram
	queueWait    *prometheus.HistogramVec
	runDuration  *prometheus.HistogramVec
	requests     *prometheus.CounterVec
	requestTimes *prometheus.HistogramVec
	leasesLost   *prometheus.CounterVec
	heartbeats   prometheus.Histogram

	sources atomic.Pointer[Sources]
}

// Sources are the live figures of the engine that the metrics read at
// scrape time; the engine attaches them once it is built (SetSources).
// Without them (wf serve, tests), this process reports no leader, no
// slots, and no database-wide gauges.
type Sources struct {
	// IsLeader reports whether this instance leads its service. Only the
	// leader reports the database-wide gauges (queue depth, oldest pending
	// age, dead letters, outbox), so that sum() across instances is right.
	IsLeader func() bool
	// Slots reports the slots in use and the slots this instance has.
	Slots func() (busy, total int)
}

// SetSources attaches the engine's live figures.
func (m *Metrics) SetSources(s Sources) { m.sources.Store(&s) }

// source returns the attached sources (zero when none).
func (m *Metrics) source() Sources {
	if s := m.sources.Load(); s != nil {
		return *s
	}
	return Sources{}
}

// leader reports whether this instance leads (false without sources).
func (m *Metrics) leader() bool {
	s := m.source()
	return s.IsLeader != nil && s.IsLeader()
}

// Config configures Metrics.
type Config struct {
	// Store reads queue depth and row estimates; nil leaves them out.
	Store *store.Store
	// TaskTypes are reported with a depth of 0 when they have no live task.
	TaskTypes []string
	// Limits are the task types' claim-time limits: the due tasks they hold
	// back are reported as wf_tasks_held.
	Limits map[string]store.TypeLimits
	// DepthTTL is how long a queue-depth reading is reused. Default 10s.
	DepthTTL time.Duration
	// DepthTimeout bounds one queue-depth reading. Default 2s.
	DepthTimeout time.Duration
	Logger       *slog.Logger
}

// The metrics implement the dispatcher's observer.
var _ execution.Observer = (*Metrics)(nil)

// New returns the metrics on a new registry, with the Go runtime and
// process collectors.
func New(cfg Config) *Metrics {
	cfg.DepthTTL = cmp.Or(cfg.DepthTTL, 10*time.Second)
	cfg.DepthTimeout = cmp.Or(cfg.DepthTimeout, 2*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	latency := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	m := &Metrics{
		cfg: cfg,
		reg: prometheus.NewRegistry(),
		claimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wf_tasks_claimed_total", Help: "Tasks claimed to run, by task type.",
		}, []string{"task_type"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wf_tasks_finished_total",
			Help: "Task runs that ended, by task type and outcome: COMPLETED, FAILED, DEAD_LETTER, or RETRIED (back to PENDING with a backoff).",
		}, []string{"task_type", "status"}),
		claimBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "wf_claim_duration_seconds", Help: "Time one batched claim statement took.", Buckets: latency,
		}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wf_task_queue_wait_seconds", Help: "Time from a task being due (run_after) to its claim, by task type.", Buckets: latency,
		}, []string{"task_type"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wf_task_run_duration_seconds", Help: "Time one task run took, by task type and outcome.", Buckets: latency,
		}, []string{"task_type", "status"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wf_http_requests_total", Help: "HTTP API requests, by route pattern and status code.",
		}, []string{"route", "code"}),
		requestTimes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wf_http_request_duration_seconds", Help: "HTTP API request latency, by route pattern.", Buckets: latency,
		}, []string{"route"}),
		leasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wf_leases_lost_total", Help: "Runs this instance cancelled because their task's lease was lost (cancelled, rescued or taken over), by task type.",
		}, []string{"task_type"}),
		heartbeats: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "wf_heartbeat_duration_seconds", Help: "Time one batched heartbeat statement took.", Buckets: latency,
		}),
	}
	leader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wf_leader", Help: "1 while this instance leads its service, else 0.",
	}, func() float64 {
		if m.leader() {
			return 1
		}
		return 0
	})
	// slots is a gauge of one of the source's two slot counts (0 without one).
	slots := func(opts prometheus.GaugeOpts, pick func(busy, total int) int) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(opts, func() float64 {
			if s := m.source(); s.Slots != nil {
				return float64(pick(s.Slots()))
			}
			return 0
		})
	}
	slotsBusy := slots(prometheus.GaugeOpts{Name: "wf_slots_busy", Help: "Task slots of this instance in use."},
		func(busy, _ int) int { return busy })
	slotsTotal := slots(prometheus.GaugeOpts{Name: "wf_slots_total", Help: "Task slots of this instance (--slots)."},
		func(_, total int) int { return total })
	m.reg.MustRegister(m.claimed, m.finished, m.claimBatch, m.queueWait, m.runDuration, m.requests, m.requestTimes,
		m.leasesLost, m.heartbeats, leader, slotsBusy, slotsTotal, buildInfo(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Store != nil {
		m.reg.MustRegister(newQueueCollector(cfg, m.leader), newDedupCollector(cfg, m.leader))
	}
	return m
}

// buildInfo is wf_build_info: 1, labelled with the build (as wf --version
// and GET /healthz say it, see internal/buildinfo).
func buildInfo() prometheus.Collector {
	b := buildinfo.Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "wf_build_info", Help: "1, labelled with the version and VCS revision wf was built from and its Go version.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Commit, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

// The metrics are told about heartbeats and lost leases.
var _ execution.LeaseObserver = (*Metrics)(nil)

// Heartbeat implements execution.LeaseObserver.
func (m *Metrics) Heartbeat(_ int, took time.Duration) { m.heartbeats.Observe(took.Seconds()) }

// LeaseLost implements execution.LeaseObserver.
func (m *Metrics) LeaseLost(task *wftype.Task) { m.leasesLost.WithLabelValues(task.TaskType).Inc() }

// Registry is the metrics' own registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(m.cfg.Logger.Handler(), slog.LevelWarn)})
}

// Claimed implements execution.Observer.
func (m *Metrics) Claimed(tasks []wftype.Task, took time.Duration) {
	m.claimBatch.Observe(took.Seconds())
	for i := range tasks {
		t := &tasks[i]
		m.claimed.WithLabelValues(t.TaskType).Inc()
		if t.StartedAt != nil {
			m.queueWait.WithLabelValues(t.TaskType).Observe(max(t.StartedAt.Sub(t.RunAfter).Seconds(), 0))
		}
	}
}

// Finished implements execution.Observer.
func (m *Metrics) Finished(task *wftype.Task, status wftype.TaskStatus, ran time.Duration) {
	label := string(status)
	if status == wftype.StatusPending {
		label = "RETRIED"
	}
	m.finished.WithLabelValues(task.TaskType, label).Inc()
	m.runDuration.WithLabelValues(task.TaskType, label).Observe(ran.Seconds())
}

// ObserveRequest counts one HTTP request by its route pattern; unmatched
// paths share one label.
func (m *Metrics) ObserveRequest(pattern string, status int, took time.Duration) {
	if pattern == "" {
		pattern = "unmatched"
	}
	m.requests.WithLabelValues(pattern, strconv.Itoa(status)).Inc()
	m.requestTimes.WithLabelValues(pattern).Observe(took.Seconds())
}
