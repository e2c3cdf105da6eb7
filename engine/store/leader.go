package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Probe is what one poll of a follower learns.
type Probe struct {
	Leader   bool // the advisory lock was taken: this session now leads
	TasksDue bool // a PENDING task of the probed types is due
	// EventsDue: a PENDING event is due, or a PROCESSING event's lease
	// has ended (its consumer stopped): a consumer has work either way.
	EventsDue bool
}

// tryLeadAndProbeSQL is TryLeadAndProbe's statement: $1 the lock name, $2
// the task types probed.
const tryLeadAndProbeSQL = `
SELECT pg_try_advisory_lock(hashtextextended($1, 0)),
       EXISTS (SELECT 1 FROM tasks.tasks
               WHERE status = 'PENDING' AND task_type = ANY($2::text[]) AND run_after <= now()),
       EXISTS (SELECT 1 FROM tasks.events WHERE status = 'PENDING' AND run_after <= now())
       OR EXISTS (SELECT 1 FROM tasks.events WHERE status = 'PROCESSING' AND locked_until < now())`

// TryLeadAndProbe tries the leadership lock of a service (a session-level
// advisory lock, held for as long as the connection lives) and, in the same
// round trip, looks for due work. It is the one query an idle follower runs
// per poll interval. It must run on a dedicated connection, never a pool.
//
// The expired-lease look-up matters on a follower beside a leader that does
// not consume events: nothing else wakes the follower's consumer to take
// back the events of a consumer that crashed. Each EXISTS reads its own
// partial index (events_claim_idx, events_processing_idx).
func (s *Store) TryLeadAndProbe(ctx context.Context, lockName string, taskTypes []string) (Probe, error) {
	var p Probe
	err := s.db.QueryRow(ctx, tryLeadAndProbeSQL, lockName, taskTypes).Scan(&p.Leader, &p.TasksDue, &p.EventsDue)
	return p, wrap("probing for leadership and work", err)
}

// Listen subscribes the store's connection to the channels. It must run on a
// dedicated connection.
func (s *Store) Listen(ctx context.Context, channels ...string) error {
	for _, ch := range channels {
		if _, err := s.db.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return wrap("listening on "+ch, err)
		}
	}
	return nil
}
