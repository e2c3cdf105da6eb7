// Package metrics holds wf's Prometheus metrics: the engine's claims and
// outcomes (it is the engine's execution.Observer), queue depth and row
// estimates read from the store, and the HTTP API's requests. It lives in
// the engine so that the engine never calls up into the HTTP package; the
// API serves it at /metrics.
package metrics

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
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
}

// Config configures Metrics.
type Config struct {
	// Store reads queue depth and row estimates; nil leaves them out.
	Store *store.Store
	// TaskTypes are reported with a depth of 0 when they have no live task.
	TaskTypes []string
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
	}
	m.reg.MustRegister(m.claimed, m.finished, m.claimBatch, m.queueWait, m.runDuration, m.requests, m.requestTimes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Store != nil {
		m.reg.MustRegister(newDepthCollector(cfg))
	}
	return m
}

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

// depthCollector reports queue depth and row estimates, read at most once per TTL.
type depthCollector struct {
	cfg      Config
	depth    *prometheus.Desc
	estimate *prometheus.Desc
	up       *prometheus.Desc

	mu       sync.Mutex
	readAt   time.Time
	depths   []store.QueueDepth
	rows     map[wftype.TaskStatus]float64
	lastRead bool
}

func newDepthCollector(cfg Config) *depthCollector {
	return &depthCollector{
		cfg: cfg,
		depth: prometheus.NewDesc("wf_queue_depth",
			"Live tasks by task type and status (PENDING, ACTIVE), counted from the partial indexes on live rows.",
			[]string{"task_type", "status"}, nil),
		estimate: prometheus.NewDesc("wf_task_rows_estimate",
			"Rows of tasks.tasks by status, estimated from the planner's statistics (as fresh as the last ANALYZE).",
			[]string{"status"}, nil),
		up: prometheus.NewDesc("wf_queue_depth_up",
			"1 when the last queue-depth reading succeeded, 0 when it failed (the values shown are then older).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.estimate
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.readAt) >= c.cfg.DepthTTL {
		c.read()
	}
	counts := map[[2]string]float64{}
	for _, tt := range c.cfg.TaskTypes {
		counts[[2]string{tt, string(wftype.StatusPending)}] = 0
		counts[[2]string{tt, string(wftype.StatusActive)}] = 0
	}
	for _, d := range c.depths {
		counts[[2]string{d.TaskType, string(d.Status)}] = float64(d.Count)
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, n, k[0], k[1])
	}
	for status, n := range c.rows {
		ch <- prometheus.MustNewConstMetric(c.estimate, prometheus.GaugeValue, n, string(status))
	}
	up := 0.0
	if c.lastRead {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}

// read refreshes the readings; on failure the previous ones stay.
func (c *depthCollector) read() {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DepthTimeout+time.Second)
	defer cancel()
	c.readAt = time.Now()
	depths, err := c.cfg.Store.QueueDepths(ctx, c.cfg.DepthTimeout)
	if err != nil {
		c.lastRead = false
		c.cfg.Logger.Warn("reading queue depth for metrics failed", "err", err)
		return
	}
	rows, err := c.cfg.Store.EstimateTaskRows(ctx)
	if err != nil {
		c.lastRead = false
		c.cfg.Logger.Warn("reading row estimates for metrics failed", "err", err)
		return
	}
	c.depths, c.rows, c.lastRead = depths, rows, true
}
