package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/leader"
	"github.com/wfhq/wf/engine/store"
)

// idle starts `wf run` instances with nothing to do and measures what they
// cost: resident memory, and the statements a follower and the leader run
// per poll interval. The bench first holds the service's leader lock itself,
// so every instance is a follower; then it lets go and one of them leads.
// Statements are counted with pg_stat_statements (calls), or from the
// database's commit counter when that extension is missing.
func idle(ctx context.Context, e *env, res *Result) error {
	cfg := e.cfg
	lockConn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		return fmt.Errorf("error connecting to hold the leader lock: %w", err)
	}
	defer lockConn.Close(context.WithoutCancel(ctx))
	probe, err := store.New(lockConn).TryLeadAndProbe(ctx, leader.LockName(serviceName), nil)
	if err != nil {
		return err
	}
	if !probe.Leader {
		return fmt.Errorf("error holding the leader lock of %s: another session holds it", serviceName)
	}
	m, err := startMeter(ctx, e)
	if err != nil {
		return err
	}
	w, err := startWorkers(ctx, e, false)
	if err != nil {
		return err
	}
	defer func() { _ = w.stop() }() // on an error; the run stops them itself to measure them
	out := &IdleResult{Followers: cfg.Instances, PollInterval: cfg.PollInterval.Seconds(), Window: cfg.Duration.Seconds()}
	settle := 2*cfg.PollInterval + time.Second
	polls := cfg.Duration.Seconds() / cfg.PollInterval.Seconds()

	cfg.Logger.Info("watching idle followers", "instances", cfg.Instances, "window", cfg.Duration)
	time.Sleep(settle)
	followerCalls, byQuery, countedBy, err := countStatements(ctx, e, cfg.Duration)
	if err != nil {
		return err
	}
	out.CountedBy = countedBy
	out.FollowerQueriesPerPoll = round2(float64(followerCalls) / float64(cfg.Instances) / polls)
	for q, n := range byQuery {
		out.FollowerStatements = append(out.FollowerStatements, Statement{Query: q, Calls: n})
	}
	rss := func() {
		for _, pid := range w.pids() {
			kb, _ := processRSS(pid)
			out.RSSMB = append(out.RSSMB, round2(float64(kb)/1024))
			out.MaxRSSMB = max(out.MaxRSSMB, round2(float64(kb)/1024))
		}
	}
	rss()

	// Let go of the lock: one instance leads; the others stay followers.
	if err := lockConn.Close(ctx); err != nil {
		return fmt.Errorf("error releasing the leader lock: %w", err)
	}
	cfg.Logger.Info("watching an idle leader")
	time.Sleep(settle + cfg.PollInterval)
	total, _, _, err := countStatements(ctx, e, cfg.Duration)
	if err != nil {
		return err
	}
	leaderCalls := float64(total) - out.FollowerQueriesPerPoll*float64(cfg.Instances-1)*polls
	out.LeaderQueriesPerPoll = round2(math.Max(leaderCalls, 0) / polls)
	rss()

	if err := m.stopWorkers(ctx, w, res, false); err != nil {
		return err
	}
	res.Idle = out
	return nil
}

// countStatements counts the statements the instances run over window.
func countStatements(ctx context.Context, e *env, window time.Duration) (int64, map[string]int64, string, error) {
	snapshot := func() (map[string]int64, error) {
		top, err := e.store.TopStatements(ctx, 10_000)
		if err != nil {
			return nil, err
		}
		m := map[string]int64{}
		for _, s := range top {
			if isBenchQuery(s.Query) {
				continue
			}
			m[s.Query] += s.Calls
		}
		return m, nil
	}
	before, err := snapshot()
	if err != nil {
		// No pg_stat_statements: fall back on the commit counter, where
		// every statement outside a transaction is one commit.
		c0, cerr := e.store.DatabaseCommits(ctx)
		if cerr != nil {
			return 0, nil, "", cerr
		}
		time.Sleep(window)
		c1, cerr := e.store.DatabaseCommits(ctx)
		if cerr != nil {
			return 0, nil, "", cerr
		}
		return c1 - c0 - 1, nil, "xact_commit", nil
	}
	time.Sleep(window)
	after, err := snapshot()
	if err != nil {
		return 0, nil, "", err
	}
	var total int64
	diff := map[string]int64{}
	for q, n := range after {
		if d := n - before[q]; d > 0 {
			diff[oneLine(q, 120)] = d
			total += d
		}
	}
	return total, diff, "pg_stat_statements", nil
}

// isBenchQuery recognises the bench's own monitoring statements.
func isBenchQuery(q string) bool {
	for _, s := range []string{"pg_stat_statements", "pg_stat_database", "pg_stat_activity"} {
		if strings.Contains(q, s) {
			return true
		}
	}
	return false
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
