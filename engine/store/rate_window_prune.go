package store

import (
	"context"
	"fmt"
	"time"
)

// A row of tasks.rate_windows (migrations 019 and 029) counts the starts of
// one rate-limited task type, or of one tenant of it, in one window. A claim
// overwrites a row whose window is over, but nothing else removes one: a
// dropped catalog, a type whose rate_limit was removed, a tenant that ran
// once a year ago would each keep theirs for good. PruneRateWindows, run by
// the leader's maintenance, deletes the rows of windows that are over.
//
// Deleting a row never lifts a limit. A claim (and StartSync) counts only
// the row of the window that holds its time (limitsCTEs, started), and
// finding none begins a fresh window, which is what it does with a row of an
// older window too (countStartsSQL): so a row of a window that ended before
// the claim's time is worth nothing to it, deleted or not. Every writer of a
// row holds its type's advisory lock (globalLockSQL) from before it reads
// the row until it commits; the prune tries that lock without waiting and
// skips the types someone holds, so it never deletes under a claim that is
// counting, and never waits on one (nor a claim on it, but for the few
// milliseconds of one bounded delete). The test of the window's end is
// repeated on the row deleted: a row rewritten to a current window between
// the prune's read and its delete is kept.

// maxRateWindow is the longest rate window a spec may declare (rate_limit
// interval, engine/spec: 24h). A row written before migration 029 has no
// window_seconds, so its window's end is not known; a claim reads such a row
// as a window of its own type's interval, at most this long, so the row can
// matter to no claim once this much has passed since its window_start.
const maxRateWindow = 24 * time.Hour

// RateWindowGrace is how long after its window ended a row of
// tasks.rate_windows is kept. Claims count on the database's clock at the
// start of their statement, under the type's lock, so none needs a window
// that is over; the grace is for a claim or synchronous start that gives its
// own time (ClaimParams.Now, SyncStart.Now) a little behind the prune's, and
// costs no more than an hour's rows.
const RateWindowGrace = time.Hour

// rateWindowOverSQL holds for a row w of tasks.rate_windows whose window
// ended RateWindowGrace ($2, seconds) before the prune's time ($1, NULL: the
// database's clock when the statement began).
var rateWindowOverSQL = fmt.Sprintf(
	`w.window_start + make_interval(secs => coalesce(w.window_seconds, %d)) < coalesce($1::timestamptz, statement_timestamp()) - make_interval(secs => $2)`,
	int(maxRateWindow.Seconds()))

// pruneRateWindowsSQL deletes up to $3 rows of windows that are over
// (rateWindowOverSQL), of types whose lock (typeLockKey) it gets without
// waiting. The lock is tried while the rows are picked (only for a row
// that is over: the CASE keeps the planner from trying it first), so the
// rows of a type someone holds are passed over rather than picked and
// left: a batch is cut short only when the rows that are over run out,
// and a pass (a batch at a time, until one is short) goes on past them.
// The rows are picked by ctid from a sequential read of the table that
// stops at the limit: no index serves the window's end, and none is worth
// its cost to every claim, as the table holds a row per limited type and
// tenant that ran lately (on 1M rows: 10 ms a batch of 5000, 30 ms a read
// that finds none). The test of the window's end is repeated on the
// deleted row, so a row a claim rewrote meanwhile stays.
var pruneRateWindowsSQL = `
DELETE FROM tasks.rate_windows w
WHERE w.ctid = ANY (ARRAY(
        SELECT w.ctid FROM tasks.rate_windows w
        WHERE CASE WHEN ` + rateWindowOverSQL + `
                   THEN pg_try_advisory_xact_lock(` + typeLockKey("w.task_type") + `)
                   ELSE false END
        LIMIT $3))
  AND ` + rateWindowOverSQL

// PruneRateWindowsSQL returns the statement of PruneRateWindows ($1 the
// time, $2 the grace in seconds, $3 the limit), for EXPLAIN in tests.
func PruneRateWindowsSQL() string { return pruneRateWindowsSQL }

// PruneRateWindows deletes up to limit rows of tasks.rate_windows whose
// window ended RateWindowGrace before now (nil: the database's clock, the
// one claims count on) and returns how many went. Rows of a type whose lock
// a claim holds are left for a later call. Run it outside any longer
// transaction: the type locks it takes last until its transaction ends,
// and the claims of those types wait for them.
func (s *Store) PruneRateWindows(ctx context.Context, now *time.Time, limit int) (int64, error) {
	tag, err := s.db.Exec(ctx, pruneRateWindowsSQL, now, RateWindowGrace.Seconds(), limit)
	if err != nil {
		return 0, wrap("pruning rate windows", err)
	}
	return tag.RowsAffected(), nil
}
