package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Tick is one fire time of a schedule.
type Tick struct {
	Schedule string
	At       time.Time
}

// LastTicks returns the latest recorded tick of each schedule that fired at
// least once. A new leader resumes each schedule from there.
func (s *Store) LastTicks(ctx context.Context) (map[string]time.Time, error) {
	const q = `SELECT schedule_name, max(tick) FROM tasks.schedule_ticks GROUP BY schedule_name`
	return scheduleTimes(ctx, s.db, "reading the last schedule ticks", q)
}

// scheduleTimes runs q, whose rows are (schedule name, time), and returns
// the times by schedule name, in UTC; doing names the work in errors.
func scheduleTimes(ctx context.Context, db DBTX, doing, q string, args ...any) (map[string]time.Time, error) {
	out, err := queryMap[string, time.Time](ctx, db, doing, q, args...)
	for name, at := range out {
		out[name] = at.UTC()
	}
	return out, err
}

// RecordTicks records ticks as fired and returns those that were not
// recorded before, in the order given. Run it in the transaction that
// creates the ticks' tasks: a tick recorded by another leader (committed, or
// in flight — the insert waits for it) is left out, so it never fires twice.
func (s *Store) RecordTicks(ctx context.Context, ticks []Tick) ([]Tick, error) {
	if len(ticks) == 0 {
		return nil, nil
	}
	const q = `
INSERT INTO tasks.schedule_ticks (schedule_name, tick)
SELECT * FROM unnest($1::text[], $2::timestamptz[])
ON CONFLICT (schedule_name, tick) DO NOTHING
RETURNING schedule_name, tick`
	names := make([]string, len(ticks))
	ats := make([]time.Time, len(ticks))
	for i, t := range ticks {
		names[i], ats[i] = t.Schedule, t.At
	}
	rows, err := s.db.Query(ctx, q, names, ats)
	if err != nil {
		return nil, wrap("recording schedule ticks", err)
	}
	defer rows.Close()
	type key struct {
		name string
		at   int64
	}
	fresh := map[key]bool{}
	for rows.Next() {
		var name string
		var at time.Time
		if err := rows.Scan(&name, &at); err != nil {
			return nil, wrap("recording schedule ticks", err)
		}
		fresh[key{name, at.UnixMicro()}] = true
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("recording schedule ticks", err)
	}
	var out []Tick
	for _, t := range ticks {
		if fresh[key{t.Schedule, t.At.UnixMicro()}] {
			out = append(out, t)
		}
	}
	return out, nil
}

// SetTickTasks records which task each fired tick created.
func (s *Store) SetTickTasks(ctx context.Context, ticks []Tick, taskIDs []uuid.UUID) error {
	if len(ticks) == 0 {
		return nil
	}
	const q = `
UPDATE tasks.schedule_ticks s
SET task_id = x.task_id
FROM unnest($1::text[], $2::timestamptz[], $3::uuid[]) AS x(schedule_name, tick, task_id)
WHERE s.schedule_name = x.schedule_name AND s.tick = x.tick`
	names := make([]string, len(ticks))
	ats := make([]time.Time, len(ticks))
	for i, t := range ticks {
		names[i], ats[i] = t.Schedule, t.At
	}
	_, err := s.db.Exec(ctx, q, names, ats, taskIDs)
	return wrap("recording the tasks of schedule ticks", err)
}

// PruneTicks deletes ticks recorded before `before`, except the latest of
// each schedule (which a new leader resumes from), and returns how many it
// deleted.
func (s *Store) PruneTicks(ctx context.Context, before time.Time) (int, error) {
	const q = `
DELETE FROM tasks.schedule_ticks s
WHERE s.tick < $1
  AND s.tick < (SELECT max(m.tick) FROM tasks.schedule_ticks m WHERE m.schedule_name = s.schedule_name)`
	tag, err := s.db.Exec(ctx, q, before)
	if err != nil {
		return 0, wrap("pruning schedule ticks", err)
	}
	return int(tag.RowsAffected()), nil
}

// FirstSightings records now as the first sighting of each named schedule
// not seen before, and returns the first sighting of every named schedule. A
// schedule's history starts there: a new leader resumes a schedule that never
// fired from its first sighting, whichever leader saw it.
func (s *Store) FirstSightings(ctx context.Context, names []string, now time.Time) (map[string]time.Time, error) {
	if len(names) == 0 {
		return map[string]time.Time{}, nil
	}
	// Two statements, not one: the second sees a sighting that another
	// leader committed while the first waited on it.
	const record = `
INSERT INTO tasks.schedule_sightings (schedule_name, first_seen)
SELECT unnest($1::text[]), $2
ON CONFLICT (schedule_name) DO NOTHING`
	if _, err := s.db.Exec(ctx, record, names, now); err != nil {
		return nil, wrap("recording schedule sightings", err)
	}
	const read = `SELECT schedule_name, first_seen FROM tasks.schedule_sightings WHERE schedule_name = ANY($1)`
	return scheduleTimes(ctx, s.db, "reading schedule sightings", read, names)
}
