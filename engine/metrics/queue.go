package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// queueCollector reports the database-wide gauges, on the leader only (so
// that sum() across instances counts each task once), read at most once per
// DepthTTL whatever the number of scrapers, with the dashboard's overview
// (store.ReadOverview: partial indexes on live and dead-letter rows, the
// last hour's finished rows, the planner's estimates; never a count of
// history), under a statement timeout.
type queueCollector struct {
	cfg      Config
	isLeader func() bool

	depth, oldest, dead, failed, outbox, outboxAge, outboxHeld, estimate, up, paused, unreadable, held *prometheus.Desc

	mu       sync.Mutex
	readAt   time.Time
	overview store.Overview
	// unreadableSecrets is the last count of webhook subscribers whose
	// secret does not decrypt (-1 until one reading succeeded).
	unreadableSecrets int
	heldNow           []store.Held
	lastRead          bool
}

func newQueueCollector(cfg Config, isLeader func() bool) *queueCollector {
	tt := []string{"task_type", "schema_name"}
	return &queueCollector{
		cfg: cfg, isLeader: isLeader, unreadableSecrets: -1,
		unreadable: prometheus.NewDesc("wf_webhook_secrets_unreadable",
			"Webhook subscribers whose secret the configured keys cannot decrypt (sealed under a key WF_SECRET_KEY or secrets.keys no longer lists): the fan-out skips them. Leader only.", nil, nil),
		depth: prometheus.NewDesc("wf_queue_depth",
			"Live tasks by task type, tenant and status (PENDING, ACTIVE), from the partial indexes on live rows. Reported by the leader only.",
			append(tt, "status"), nil),
		oldest: prometheus.NewDesc("wf_queue_oldest_pending_age_seconds",
			"Age of the oldest due PENDING task (since its run_after), by task type and tenant; absent when none is due. Leader only.", tt, nil),
		dead: prometheus.NewDesc("wf_tasks_dead_letter",
			"DEAD_LETTER tasks by task type and tenant (every one, from the partial index on finished rows). Leader only.", tt, nil),
		failed: prometheus.NewDesc("wf_tasks_failed_last_hour",
			"Tasks that ended FAILED in the last hour, by task type and tenant. Leader only.", tt, nil),
		outbox: prometheus.NewDesc("wf_outbox_events",
			"Events in the outbox by status (PENDING, PROCESSING, DEAD_LETTER). Leader only.", []string{"status"}, nil),
		outboxAge: prometheus.NewDesc("wf_outbox_oldest_pending_age_seconds",
			"Age of the oldest due PENDING event in the outbox (0 when none is due): events held because no subscription matched them (events.unmatched_grace) or waiting for a retry are not due. Leader only.", nil, nil),
		outboxHeld: prometheus.NewDesc("wf_outbox_events_held",
			"PENDING events not due yet (part of wf_outbox_events{status=\"PENDING\"}): held because no subscription matched them, or waiting for a retry. Leader only.", nil, nil),
		estimate: prometheus.NewDesc("wf_task_rows_estimate",
			"Rows of tasks.tasks by status, estimated from the planner's statistics (as fresh as the last ANALYZE). Leader only.",
			[]string{"status"}, nil),
		paused: prometheus.NewDesc("wf_paused",
			"1 for each paused task type (kind task_type) and tenant (kind tenant, name its schema_name): no instance claims its PENDING tasks. Leader only.",
			[]string{"kind", "name"}, nil),
		held: prometheus.NewDesc("wf_tasks_held",
			"Due PENDING tasks that a limit of their task type holds back now, by task type, tenant and reason: concurrency_global, concurrency_per_tenant or rate_limit (they wait; no attempt is counted). Paused ones are in wf_paused. Leader only.",
			append(tt, "reason"), nil),
		up: prometheus.NewDesc("wf_queue_depth_up",
			"1 when the leader's last reading of the database-wide gauges succeeded, 0 when it failed (the values shown are then older).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.oldest, c.dead, c.failed, c.outbox, c.outboxAge, c.outboxHeld, c.estimate, c.up, c.paused, c.unreadable, c.held} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.isLeader() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.readAt) >= c.cfg.DepthTTL {
		c.read()
	}
	o := c.overview
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	type key struct{ taskType, schema, status string }
	depth := map[key]float64{}
	for _, tt := range c.cfg.TaskTypes {
		depth[key{tt, wftype.SystemSchema, string(wftype.StatusPending)}] = 0
		depth[key{tt, wftype.SystemSchema, string(wftype.StatusActive)}] = 0
	}
	for _, n := range o.Counts {
		switch n.Status {
		case wftype.StatusPending, wftype.StatusActive:
			depth[key{n.TaskType, n.SchemaName, string(n.Status)}] += float64(n.Count)
		case wftype.StatusDeadLetter:
			gauge(c.dead, float64(n.Count), n.TaskType, n.SchemaName)
		case wftype.StatusFailed:
			gauge(c.failed, float64(n.Count), n.TaskType, n.SchemaName)
		}
	}
	for k, n := range depth {
		gauge(c.depth, n, k.taskType, k.schema, k.status)
	}
	for _, a := range o.OldestPending {
		gauge(c.oldest, max(o.Now.Sub(a.OldestDueAt).Seconds(), 0), a.TaskType, a.SchemaName)
	}
	gauge(c.outbox, float64(o.Outbox.Pending), "PENDING")
	gauge(c.outbox, float64(o.Outbox.Processing), "PROCESSING")
	gauge(c.outbox, float64(o.Outbox.DeadLetter), "DEAD_LETTER")
	age := 0.0
	if o.Outbox.OldestPending != nil {
		age = max(o.Now.Sub(*o.Outbox.OldestPending).Seconds(), 0)
	}
	gauge(c.outboxAge, age)
	gauge(c.outboxHeld, float64(o.Outbox.Held))
	for status, n := range o.Estimates {
		gauge(c.estimate, n, string(status))
	}
	for _, p := range o.Paused {
		gauge(c.paused, 1, string(p.Kind), p.Name)
	}
	for _, h := range c.heldNow {
		gauge(c.held, float64(h.Count), h.TaskType, h.SchemaName, h.Reason)
	}
	if c.unreadableSecrets >= 0 {
		gauge(c.unreadable, float64(c.unreadableSecrets))
	}
	up := 0.0
	if c.lastRead {
		up = 1
	}
	gauge(c.up, up)
}

// read refreshes the reading; on failure the previous one stays.
func (c *queueCollector) read() {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DepthTimeout+time.Second)
	defer cancel()
	c.readAt = time.Now()
	o, err := c.cfg.Store.ReadOverview(ctx, store.OverviewParams{Window: time.Hour, Timeout: c.cfg.DepthTimeout})
	if err != nil {
		c.lastRead = false
		c.cfg.Logger.Warn("reading the queue gauges for metrics failed", "err", err)
		return
	}
	held, err := c.cfg.Store.HeldTasks(ctx, c.cfg.Limits)
	if err != nil {
		c.lastRead = false
		c.cfg.Logger.Warn("reading the held tasks for metrics failed", "err", err)
		return
	}
	notServed, err := c.cfg.Store.NotServedHeld(ctx, o, held)
	if err != nil {
		c.lastRead = false
		c.cfg.Logger.Warn("reading the task types no instance serves for metrics failed", "err", err)
		return
	}
	c.overview, c.heldNow, c.lastRead = o, append(held, notServed...), true
	n, err := c.cfg.Store.CountUnreadableWebhookSecrets(ctx)
	if err != nil {
		c.cfg.Logger.Warn("counting unreadable webhook secrets for metrics failed", "err", err)
		return
	}
	c.unreadableSecrets = n
}
