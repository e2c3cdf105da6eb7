package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The hot statements on tasks (claim and completion) run through
// withPlanGuard, which guards against one failure of PostgreSQL's plan cache:
// a prepared statement's generic plan keeps the shape it was given when it
// was made. Made while a partition was (nearly) empty, it reads that
// partition sequentially, which was right then, and keeps doing so once the
// partition holds a backlog, until autovacuum happens to analyze it (a minute
// or more): every claim then reads every waiting task. A statement that took
// far longer than its rows explain makes the guard drop the cached plans of
// the connection it ran on (DISCARD PLANS), so the next one is planned for
// the partition's size now. Planning every statement instead would cost half
// a millisecond each, a large share of a small claim.
//
// A connection drops its plans at most once per planDiscardEvery: one
// re-plan is all the failure above needs, and without the limit a busy
// machine, where every statement is slow, made the guard drop every plan
// after every claim, so every claim was planned anew. The fair claim's plan
// alone took longer than its execution, which kept the statements slow: a
// 100-slot burn-down planned 545 of 552 claims and ran at a third of its
// rate (BENCHMARKS.md, issue 21).
const (
	slowStatement     = 10 * time.Millisecond // always allowed
	slowPerRow        = 50 * time.Microsecond // allowed per row returned
	planDiscardEvery  = 30 * time.Second      // at most one DISCARD PLANS per connection
	planGuardForgetAt = 2 * planDiscardEvery  // entries older than this are dropped
)

// planGuard remembers when each connection last dropped its plans. The
// times are wall time: they pace a cache, no time the engine reckons with.
type planGuard struct {
	mu   sync.Mutex
	last map[*pgx.Conn]time.Time
}

// allow reports whether conn may drop its plans at now, and if so records
// that it does. A statement whose connection is unknown (nil) may always.
func (g *planGuard) allow(conn *pgx.Conn, now time.Time) bool {
	if conn == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if at, ok := g.last[conn]; ok && now.Sub(at) < planDiscardEvery {
		return false
	}
	// Forget connections that have not dropped plans for a while (closed
	// ones among them), so the map stays as small as the pool.
	for c, at := range g.last {
		if now.Sub(at) >= planGuardForgetAt {
			delete(g.last, c)
		}
	}
	g.last[conn] = now
	return true
}

// connOf returns the connection a DBTX runs on, or nil for a pool.
func connOf(db DBTX) *pgx.Conn {
	switch c := db.(type) {
	case *pgxpool.Conn:
		return c.Conn()
	case *pgx.Conn:
		return c
	case pgx.Tx:
		return c.Conn()
	}
	return nil
}

// withPlanGuard runs fn, which returns how many rows it read, on one
// connection of the store's pool (or on the store's connection or
// transaction as it is) and drops that connection's cached plans when fn was
// slower than slowStatement + slowPerRow per row, at most once per
// planDiscardEvery.
func (s *Store) withPlanGuard(ctx context.Context, fn func(db DBTX) (rows int, err error)) error {
	db, release := s.db, func() {}
	if pool, ok := s.db.(*pgxpool.Pool); ok {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return wrap("acquiring a connection", err)
		}
		db, release = conn, conn.Release
	}
	defer release()
	start := time.Now()
	n, err := fn(db)
	if err == nil && time.Since(start) > slowStatement+time.Duration(n)*slowPerRow && s.plans.allow(connOf(db), time.Now()) {
		// Inside a caller's transaction the plans are dropped too; an error
		// here changes nothing for the statement that already succeeded.
		_, _ = db.Exec(ctx, "DISCARD PLANS")
	}
	return err
}
