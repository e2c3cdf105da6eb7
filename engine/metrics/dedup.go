package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wfhq/wf/engine/clock"
)

// dedupCollector reports wf_dedup_keys_kept on the leader: the dedup keys
// of ended tasks that their unique period still holds (docs/flow-control.md),
// read at most once per DepthTTL from the partial index on ended keys.
type dedupCollector struct {
	cfg      Config
	isLeader func() bool
	kept     *prometheus.Desc

	mu     sync.Mutex
	readAt time.Time
	n      int64
	ok     bool
}

func newDedupCollector(cfg Config, isLeader func() bool) *dedupCollector {
	return &dedupCollector{cfg: cfg, isLeader: isLeader,
		kept: prometheus.NewDesc("wf_dedup_keys_kept",
			"Dedup keys of ended tasks held for their task type's (or subscription's) unique period now: an enqueue with one is answered with the finished task. Leader only.", nil, nil)}
}

// Describe implements prometheus.Collector.
func (c *dedupCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.kept }

// Collect implements prometheus.Collector.
func (c *dedupCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.isLeader() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.readAt) >= c.cfg.DepthTTL {
		c.readAt = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DepthTimeout)
		n, err := c.cfg.Store.CountKeptDedupKeys(ctx, clock.Now())
		cancel()
		if err != nil {
			c.cfg.Logger.Warn("counting the kept dedup keys for metrics failed", "err", err)
		} else {
			c.n, c.ok = n, true
		}
	}
	if c.ok {
		ch <- prometheus.MustNewConstMetric(c.kept, prometheus.GaugeValue, float64(c.n))
	}
}
