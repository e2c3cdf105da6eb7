package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// Finish is the outcome of one task run (or of a janitor decision).
type Finish struct {
	ID     uuid.UUID
	Status wftype.TaskStatus // COMPLETED, FAILED, DEAD_LETTER, or PENDING for a retry
	// Outputs replace the task's outputs when not nil.
	Outputs json.RawMessage
	// Error is the failure message (nil on success).
	Error *string
	// RetryCount is the task's retry count after this outcome.
	RetryCount int
	// RunAfter is when a retried task becomes due again (PENDING only).
	RunAfter *time.Time
	// RetryIn, for a PENDING outcome without RunAfter, is how long after
	// the statement's time (FinishParams.Now, else the database's now())
	// the task becomes due again: a retry's delay is measured on the clock
	// that claims compare run_after with, not on this host's.
	RetryIn time.Duration
	// Snoozed, for a PENDING outcome, says the handler put the task off
	// (wftype.SnoozeError): its snoozes count goes up by one, its retries
	// stay as RetryCount says.
	Snoozed bool
	// Attempt, when not zero, is the attempt (the claim) the outcome is
	// of: the row changes only while the task is still on that attempt, so
	// an outcome delayed past its lease cannot overwrite a newer claim of
	// the task by the same instance.
	Attempt int
}

// FinishParams qualifies which rows a FinishTasks call may change.
type FinishParams struct {
	// Owner, when set, limits changes to tasks that instance still holds:
	// a task whose lease was taken away keeps its new owner's result.
	Owner string
	// ExpiredBefore, when set, limits changes to tasks whose lease ended
	// before it (the janitor's rescue).
	ExpiredBefore *time.Time
	Now           *time.Time // nil: the database clock
}

// finishTasksSQL applies many outcomes in one statement. Only ACTIVE rows
// change; FAILED and DEAD_LETTER outcomes write task.failed /
// task.dead_lettered events to the outbox in the same statement (so in the
// same transaction). Retried tasks notify the queued channel; terminal ones
// the status channel.
//
// The statement has no join, so its plan cannot go wrong with the batch size
// or the table's statistics (a join of the outcomes with the tasks turns into
// a whole-partition scan, or a nested loop over every pair of rows, as soon
// as an estimate is off):
//   - the tasks are read by primary key, task_id = ANY of the ids ($2),
//     passed through a sub-select so the planner counts on a few probes and
//     never trades them for a scan of the partition;
//   - the range of the tasks' creation times ($6, $7) prunes the partitions
//     they cannot be in;
//   - the parameters that only switch a condition or bound a range (the
//     owner $4, the lease cut-off $5, the times $6 and $7, the steps switch
//     $10) are read through sub-selects, so a custom plan cannot fold them
//     into a cheaper estimate than the generic plan's: otherwise PostgreSQL
//     planned every completion anew (1.4 ms each, 512 plans for 508
//     completions at 100 slots, pg_stat_statements) instead of reusing the
//     generic plan;
//   - the status test is written "IS TRUE" so the planner cannot read the
//     partial index on ACTIVE rows instead, whole (every running task and,
//     until vacuum, every finished one) for each batch;
//   - each row finds its outcome in $1, a JSON object keyed by task id (a
//     binary search, once in the SET and once for the attempt test; a
//     failure's event reads it once more): {"<id>": {"s": status, "o": outputs, "e": error,
//     "r": retry count, "a": run after, "d": retry in (seconds), "z": 1 for
//     a snooze, "n": the attempt the outcome is of, "ev": event id, "et":
//     event time}};
//   - a retried or snoozed attempt is appended to attempt_log (the last 20
//     kept), in the same row write (its outcome there is PENDING or
//     SNOOZED), since the next attempt overwrites the columns that describe
//     it; an attempt that ends the task is not: the row's columns hold it,
//     and tasks.attempt_history adds it when the history is read (migration
//     024), which spares the common completion a jsonb build and its bytes;
//   - a FAILED or DEAD_LETTER outcome's event is appended to the task's
//     emitted_events (migration 021) in the same row write, and the event
//     names the task as its source;
//   - $10 false leaves the tasks of workflow steps alone (see FinishTasks);
//   - a task of a workflow run that ended (FAILED or CANCELLED: it was
//     running when its run ended, and was left to finish) is not retried or
//     snoozed: its PENDING outcome becomes CANCELLED (endedRunSQL), so it
//     never runs again for a run that ended. The run's row is locked by the
//     caller's transaction first (FinishTasks), so its status is the last
//     one committed.
const finishTasksSQL = `
WITH updated AS (
    UPDATE tasks.tasks t
    SET (status, outputs, error, retry_count, run_after, owner_id, finished_at, locked_until, snoozes,
         attempt_log, emitted_events) = (
            SELECT x.s, coalesce(o.o, t.outputs), x.e, o.r,
                   coalesce(o.a, coalesce($3::timestamptz, now()) + make_interval(secs => o.d), t.run_after),
                   CASE WHEN x.s = 'PENDING' THEN NULL ELSE t.owner_id END,
                   CASE WHEN x.s = 'PENDING' THEN NULL ELSE coalesce($3::timestamptz, now()) END,
                   NULL::timestamptz,
                   t.snoozes + coalesce(o.z, 0),
                   CASE WHEN x.s = 'PENDING'
                   THEN tasks.append_attempt(t.attempt_log, t.attempts, t.owner_id, t.started_at,
                       coalesce($3::timestamptz, now()),
                       CASE WHEN o.z IS NOT NULL THEN 'SNOOZED' ELSE o.s END, o.e)
                   ELSE t.attempt_log END,
                   CASE WHEN o.s IN ('FAILED', 'DEAD_LETTER') AND o.ev IS NOT NULL
                   THEN tasks.append_emitted(t.emitted_events, jsonb_build_array(jsonb_build_object(
                       'event_id', o.ev,
                       'event_type', CASE o.s WHEN 'FAILED' THEN 'task.failed' ELSE 'task.dead_lettered' END,
                       'created_at', o.et)))
                   ELSE t.emitted_events END
            FROM jsonb_to_record($1::jsonb -> t.task_id::text)
                 AS o(s text, o jsonb, e text, r int, a timestamptz, d float8, z int, ev uuid, et timestamptz)
            CROSS JOIN LATERAL (SELECT CASE WHEN o.s = 'PENDING' THEN ` + endedRunSQL + ` END AS run) w
            CROSS JOIN LATERAL (
                SELECT CASE WHEN w.run IS NULL THEN o.s ELSE 'CANCELLED' END AS s,
                       CASE WHEN w.run IS NULL THEN o.e
                            ELSE ` + endedRunErrorSQL + ` || coalesce(' (its attempt ended: ' || o.e || ')', '') END AS e
            ) x)
    WHERE t.task_id = ANY (ARRAY(SELECT unnest($2::uuid[])))
      AND t."timestamp" BETWEEN (SELECT $6::timestamptz) AND (SELECT $7::timestamptz)
      AND (t.status = 'ACTIVE') IS TRUE
      AND ((SELECT $4::text) IS NULL OR t.owner_id = (SELECT $4::text))
      AND ((SELECT $5::timestamptz) IS NULL OR t.locked_until < (SELECT $5::timestamptz))
      AND t.attempts = coalesce(($1::jsonb -> t.task_id::text ->> 'n')::int, t.attempts)
      AND ((SELECT $10::boolean) OR t.workflow_run_id IS NULL)
    RETURNING t.task_id, t.task_type, t.schema_name, t.status, t.error, t.retry_count, t.max_retries, t.attempts,
              t.workflow_run_id, t.workflow_step, t.workflow_item,
              CASE WHEN t.workflow_run_id IS NOT NULL THEN t.outputs END AS step_outputs
),
events AS (
    INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, payload, source_task_id)
    SELECT ev.ev, ev.et,
           CASE u.status WHEN 'FAILED' THEN 'task.failed' ELSE 'task.dead_lettered' END,
           CASE WHEN u.schema_name = 'system' THEN 'PLATFORM' ELSE 'CATALOG' END,
           u.schema_name,
           jsonb_build_object('task_id', u.task_id, 'task_type', u.task_type, 'status', u.status,
                              'error', u.error, 'retry_count', u.retry_count, 'attempts', u.attempts),
           u.task_id
    FROM updated u
    CROSS JOIN LATERAL jsonb_to_record($1::jsonb -> u.task_id::text) AS ev(ev uuid, et timestamptz)
    WHERE u.status IN ('FAILED', 'DEAD_LETTER') AND ev.ev IS NOT NULL
    RETURNING event_id
),
notified AS (
    SELECT count(pg_notify($8, q.task_type)) AS n
    FROM (SELECT DISTINCT task_type FROM updated WHERE status = 'PENDING') q
),
event_notified AS (
    SELECT count(pg_notify($9, 'task_events')) AS n FROM (SELECT 1 FROM events LIMIT 1) q
)
SELECT u.task_id, u.workflow_run_id, u.workflow_step, u.workflow_item, u.status, u.step_outputs, u.error
FROM updated u, notified, event_notified`

// FinishTasks applies outcomes in one statement and returns the ids that
// changed; an id missing from the result was not ACTIVE (or not the owner's,
// or its lease had not expired) and is left as it was. With a step hook
// (WithStepHook), the outcomes and what the hook makes of the workflow steps
// they end commit in one transaction; without one, the ends of the steps'
// tasks are recorded in it for a step pass (RecordStepEnds).
//
// Workflow steps cost plain tasks nothing: the first statement, outside a
// transaction, ends only the tasks that carry no run id. Only when outcomes
// are left over (the tasks of workflow steps, or tasks no longer ACTIVE)
// does a transaction apply those, with their runs locked first (so a retry
// outcome sees whether its run ended: finishTasksSQL) and the hook.
func (s *Store) FinishTasks(ctx context.Context, p FinishParams, outcomes []Finish) ([]uuid.UUID, error) {
	if len(outcomes) == 0 {
		return nil, nil
	}
	if s.inTx {
		return s.finishTasks(ctx, p, outcomes, true)
	}
	done, err := s.finishTasks(ctx, p, outcomes, false)
	if err != nil || len(done) == len(outcomes) {
		return done, err
	}
	changed := make(map[uuid.UUID]bool, len(done))
	for _, id := range done {
		changed[id] = true
	}
	rest := make([]Finish, 0, len(outcomes)-len(done))
	for _, o := range outcomes {
		if !changed[o.ID] {
			rest = append(rest, o)
		}
	}
	err = s.InTx(ctx, func(tx *Store) error {
		more, err := tx.finishTasks(ctx, p, rest, true)
		done = append(done, more...)
		return err
	})
	return done, err
}

// finishTasks is FinishTasks on the store as it is (a transaction when it
// ends steps with a step hook); steps false leaves the tasks of workflow
// steps alone.
func (s *Store) finishTasks(ctx context.Context, p FinishParams, outcomes []Finish, steps bool) ([]uuid.UUID, error) {
	n := len(outcomes)
	batch, err := newKeyedBatch(outcomes, 80, func(o *Finish) uuid.UUID { return o.ID }, appendOutcome)
	if err != nil {
		return nil, err
	}
	if steps {
		// The runs of the steps' tasks first, then the tasks (the step
		// hook locks the runs again): the order of a run's failure and of
		// a cancel by hand, so that a completion never waits for a run
		// whose holder waits for the completion's tasks. Locked, a run's
		// status cannot change before the outcomes commit.
		ids := make([]uuid.UUID, len(outcomes))
		for i, o := range outcomes {
			ids[i] = o.ID
		}
		keys, lo, hi := idKeys(ids)
		if err := s.lockRunsOfTasks(ctx, keys, lo, hi); err != nil {
			return nil, err
		}
	}
	var owner *string
	if p.Owner != "" {
		owner = &p.Owner
	}
	var done []uuid.UUID
	var finished []FinishedStep
	err = s.withPlanGuard(ctx, func(db DBTX) (int, error) {
		rows, err := db.Query(ctx, finishTasksSQL, batch.doc, batch.ids, p.Now, owner, p.ExpiredBefore, batch.lo, batch.hi,
			s.channels.TaskQueued, s.channels.Events, steps)
		if err != nil {
			return 0, err
		}
		done, finished, err = scanFinished(rows, n)
		return len(done), err
	})
	if err != nil {
		return nil, wrap("finishing tasks", err)
	}
	if steps {
		if err := s.stepEnds(ctx, finished); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// scanFinished reads finishTasksSQL's result: the ids that changed, and
// those of workflow steps that reached an end.
func scanFinished(rows pgx.Rows, capacity int) ([]uuid.UUID, []FinishedStep, error) {
	defer rows.Close()
	out := make([]uuid.UUID, 0, capacity)
	var steps []FinishedStep
	for rows.Next() {
		var id [16]byte // as bytes: a uuid.UUID (an sql.Scanner) would go through text
		var run *[16]byte
		var step *string
		var item *int
		var status string
		var outputs []byte
		var errText *string
		if err := rows.Scan(&id, &run, &step, &item, &status, &outputs, &errText); err != nil {
			return nil, nil, err
		}
		out = append(out, id)
		if run == nil || status == string(wftype.StatusPending) {
			continue
		}
		fs := FinishedStep{TaskID: id, RunID: *run, Item: -1, Status: wftype.TaskStatus(status), Outputs: outputs, Error: errText}
		if step != nil {
			fs.Step = *step
		}
		if item != nil {
			fs.Item = *item
		}
		steps = append(steps, fs)
	}
	return out, steps, rows.Err()
}

// appendOutcome appends the JSON value finishTasksSQL reads for one
// outcome: status, retry count, and the outputs, error, next run and dead
// letter event when there are any.
func appendOutcome(doc []byte, o *Finish) ([]byte, error) {
	doc = append(doc, `{"s":"`...)
	doc = append(doc, o.Status...)
	doc = append(doc, `","r":`...)
	doc = strconv.AppendInt(doc, int64(o.RetryCount), 10)
	if o.Attempt != 0 {
		doc = append(doc, `,"n":`...)
		doc = strconv.AppendInt(doc, int64(o.Attempt), 10)
	}
	if o.Outputs != nil {
		doc = append(doc, `,"o":`...)
		doc = appendJSONValue(doc, o.Outputs)
	}
	if o.Error != nil {
		doc = append(doc, `,"e":`...)
		doc = appendJSONString(doc, *o.Error)
	}
	if o.RunAfter != nil {
		doc = append(doc, `,"a":"`...)
		doc = o.RunAfter.UTC().AppendFormat(doc, time.RFC3339Nano)
		doc = append(doc, '"')
	} else if o.Status == wftype.StatusPending {
		doc = append(doc, `,"d":`...)
		doc = strconv.AppendFloat(doc, max(o.RetryIn, 0).Seconds(), 'f', -1, 64)
	}
	if o.Snoozed && o.Status == wftype.StatusPending {
		doc = append(doc, `,"z":1`...)
	}
	if o.Status == wftype.StatusFailed || o.Status == wftype.StatusDeadLetter {
		id, at, err := NewID()
		if err != nil {
			return nil, err
		}
		doc = append(doc, `,"ev":`...)
		doc = appendQuotedUUID(doc, id)
		doc = append(doc, `,"et":"`...)
		doc = at.UTC().AppendFormat(doc, time.RFC3339Nano)
		doc = append(doc, '"')
	}
	return append(doc, '}'), nil
}

// scanIDs reads a result of task ids.
func scanIDs(rows pgx.Rows, capacity int) ([]uuid.UUID, error) {
	defer rows.Close()
	out := make([]uuid.UUID, 0, capacity)
	for rows.Next() {
		var id [16]byte // as bytes: a uuid.UUID (an sql.Scanner) would go through text
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// appendQuotedUUID appends id as a JSON string in its canonical text form.
func appendQuotedUUID(b []byte, id uuid.UUID) []byte {
	var text [36]byte
	hex.Encode(text[0:8], id[0:4])
	text[8] = '-'
	hex.Encode(text[9:13], id[4:6])
	text[13] = '-'
	hex.Encode(text[14:18], id[6:8])
	text[18] = '-'
	hex.Encode(text[19:23], id[8:10])
	text[23] = '-'
	hex.Encode(text[24:], id[10:])
	b = append(b, '"')
	b = append(b, text[:]...)
	return append(b, '"')
}

// appendJSONValue appends raw, or, when raw is not valid JSON, raw as a JSON
// string: one handler's malformed outputs must not fail its whole batch. For
// the same reason, what jsonb refuses though JSON allows it (invalid UTF-8,
// \u0000, a lone surrogate) is replaced by U+FFFD.
func appendJSONValue(b []byte, raw json.RawMessage) []byte {
	if !json.Valid(raw) {
		return appendJSONString(b, string(raw))
	}
	if utf8.Valid(raw) && !hasRefusedEscape(raw) {
		return append(b, raw...)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return appendJSONString(b, string(raw))
	}
	q, err := json.Marshal(withoutNUL(v)) // decoding replaced the rest
	if err != nil {
		return appendJSONString(b, string(raw))
	}
	return append(b, q...)
}

// hasRefusedEscape reports whether raw may hold an escape that jsonb
// refuses: \u0000 or a surrogate (\ud800 to \udfff, which jsonb accepts
// only as a valid pair). It may report an escaped backslash followed by such
// text too, which only costs a needless re-encoding.
func hasRefusedEscape(raw []byte) bool {
	for i := bytes.Index(raw, []byte(`\u`)); i >= 0 && i+6 <= len(raw); {
		h := raw[i+2 : i+6]
		if string(h) == "0000" || (h[0]|0x20 == 'd' && bytes.IndexByte([]byte("89abAB"), h[1]) >= 0) {
			return true
		}
		j := bytes.Index(raw[i+2:], []byte(`\u`))
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return false
}

// withoutNUL replaces the NUL characters of a decoded JSON value's strings
// and keys with U+FFFD.
func withoutNUL(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "\x00", "\uFFFD")
	case []any:
		for i := range x {
			x[i] = withoutNUL(x[i])
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[strings.ReplaceAll(k, "\x00", "\uFFFD")] = withoutNUL(e)
		}
		return m
	}
	return v
}

// appendJSONString appends s as a JSON string (invalid UTF-8 and NUL, which
// PostgreSQL's text and jsonb refuse, replaced by U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// ReleaseTasks hands ACTIVE tasks the owner still holds back to PENDING at
// once (shutdown): no lease wait, no retry counted, the attempt not counted.
// A task of a workflow run that ended is not handed back but CANCELLED
// (endedRunSQL), in a transaction that locks the runs first, as
// FinishTasks does; its step learns it there (stepEnds).
func (s *Store) ReleaseTasks(ctx context.Context, owner string, ids []uuid.UUID) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if !s.inTx {
		return inTxValue(ctx, s, func(tx *Store) ([]uuid.UUID, error) { return tx.ReleaseTasks(ctx, owner, ids) })
	}
	// Read by primary key, as in finishTasksSQL.
	const q = `
WITH released AS (
    UPDATE tasks.tasks t
    SET (status, owner_id, locked_until, started_at, attempts, run_after, finished_at, error) = (
            SELECT CASE WHEN w.run IS NULL THEN 'PENDING' ELSE 'CANCELLED' END,
                   CASE WHEN w.run IS NULL THEN NULL ELSE t.owner_id END,
                   NULL::timestamptz,
                   CASE WHEN w.run IS NULL THEN NULL ELSE t.started_at END,
                   CASE WHEN w.run IS NULL THEN greatest(t.attempts - 1, 0) ELSE t.attempts END,
                   CASE WHEN w.run IS NULL THEN now() ELSE t.run_after END,
                   CASE WHEN w.run IS NULL THEN NULL ELSE now() END,
                   CASE WHEN w.run IS NULL THEN t.error
                        ELSE ` + endedRunErrorSQL + ` || ' (its attempt was handed back at shutdown)' END
            FROM (SELECT ` + endedRunSQL + ` AS run) w)
    WHERE t.task_id = ANY (ARRAY(SELECT unnest($1::uuid[])))
      AND t."timestamp" BETWEEN $2 AND $3
      AND (t.status = 'ACTIVE') IS TRUE AND t.owner_id = $4
    RETURNING t.task_id, t.task_type, t.status, t.error, t.workflow_run_id, t.workflow_step, t.workflow_item
),
notified AS (
    SELECT count(pg_notify($5, q.task_type)) AS n
    FROM (SELECT DISTINCT task_type FROM released WHERE status = 'PENDING') q
)
SELECT task_id, workflow_run_id, workflow_step, workflow_item, status, NULL::jsonb, error FROM released, notified`
	keys, lo, hi := idKeys(ids)
	if err := s.lockRunsOfTasks(ctx, keys, lo, hi); err != nil {
		return nil, err
	}
	var out []uuid.UUID
	var cancelled []FinishedStep
	err := s.withPlanGuard(ctx, func(db DBTX) (int, error) {
		rows, err := db.Query(ctx, q, keys, lo, hi, owner, s.channels.TaskQueued)
		if err != nil {
			return 0, err
		}
		out, cancelled, err = scanFinished(rows, len(ids))
		return len(out), err
	})
	if err != nil {
		return nil, wrap("releasing tasks", err)
	}
	if err := s.stepEnds(ctx, cancelled); err != nil {
		return nil, err
	}
	return out, nil
}

// endedRunSQL is, for a task t of a workflow run, its run's status when
// the run ended (FAILED or CANCELLED), else NULL: such a task must not
// become PENDING again (it would run for a run that ended), and is
// CANCELLED instead with endedRunErrorSQL as its error. Its callers lock
// the run's row first (lockRunsOfTasks), so the status read is the last
// committed one.
const endedRunSQL = `(SELECT r.status FROM tasks.workflow_runs r
                       WHERE t.workflow_run_id IS NOT NULL AND r.run_id = t.workflow_run_id
                         AND r.status <> 'RUNNING')`

// endedRunErrorSQL is the error of a task CANCELLED because its run ended
// (w.run, endedRunSQL's status).
const endedRunErrorSQL = `'cancelled: workflow run ' || t.workflow_run_id || ' ended ' || w.run ||
                                 ' while this task ran, so it is not run again'`
