package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Which task types the live instances serve. Every `wf run` instance holds
// one connection, named "wf-serves:<service>:<owner>" (application_name),
// on which it holds a shared advisory lock per task type its dispatcher
// claims, keyed (hashtext('wf:serves'), hashtext(task type)). The locks die
// with the session, so what pg_locks shows is exactly what live instances
// serve, with no heartbeat to go stale. An instance whose election
// connection ("wf-leader:<service>:<owner>", the same length of prefix, so
// a name cut at 63 bytes is cut alike) has no such connection beside it is
// a wf of an earlier version, or one still starting: it may serve
// anything, and while one is connected no type is said not served.

// holdServedSQL takes the shared lock of each task type of $1 on this
// session; releaseServedSQL gives back those of $1.
const (
	holdServedSQL = `
SELECT count(pg_advisory_lock_shared(hashtext('wf:serves'), hashtext(t)))
FROM unnest($1::text[]) AS t`
	releaseServedSQL = `
SELECT count(pg_advisory_unlock_shared(hashtext('wf:serves'), hashtext(t)))
FROM unnest($1::text[]) AS t`
)

// HoldServedTypes takes, on the store's connection (a session: a
// *pgx.Conn, not a pool), the locks that say this instance serves the task
// types of hold, and gives back those of release. The locks are shared, so
// any number of instances hold them at once and never wait.
func (s *Store) HoldServedTypes(ctx context.Context, hold, release []string) error {
	if len(release) > 0 {
		if _, err := s.db.Exec(ctx, releaseServedSQL, release); err != nil {
			return wrap("releasing the task types this instance served", err)
		}
	}
	if len(hold) > 0 {
		if _, err := s.db.Exec(ctx, holdServedSQL, hold); err != nil {
			return wrap("stating the task types this instance serves", err)
		}
	}
	return nil
}

// notServedSQL is true when no live instance serves the task type in the
// expression typ: none holds its lock (see above), and every election
// connection of a wf instance to this database has its wf-serves
// connection beside it (an instance without one may serve it). The
// pg_stat_activity test does not depend on the type (an InitPlan, run
// once per statement).
func notServedSQL(typ string) string {
	return `(
    NOT EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
          AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
          AND l.classid = hashtext('wf:serves')::oid AND l.objid = hashtext(` + typ + `)::oid)
    AND NOT EXISTS (
        SELECT 1 FROM pg_stat_activity a
        WHERE a.datname = current_database() AND a.application_name LIKE 'wf-leader:%'
          AND NOT EXISTS (SELECT 1 FROM pg_stat_activity b
                          WHERE b.datname = current_database()
                            AND b.application_name = 'wf-serves:' || substr(a.application_name, 11))))`
}

// UnservedTaskTypes returns those of types that no live instance serves
// now (see notServedSQL), in the order given.
func (s *Store) UnservedTaskTypes(ctx context.Context, types []string) ([]string, error) {
	return s.unserved(ctx, types, "")
}

// UnservedWhileRunning returns those of types that no live instance serves
// now while some wf run instance is running (none when none runs: a task
// may be enqueued before its worker starts): `wf enqueue` and POST /tasks
// warn about them.
func (s *Store) UnservedWhileRunning(ctx context.Context, types []string) ([]string, error) {
	return s.unserved(ctx, types, `EXISTS (SELECT 1 FROM pg_stat_activity a
              WHERE a.datname = current_database() AND a.application_name LIKE 'wf-serves:%')
  AND `)
}

// unserved returns those of types that no live instance serves now and that
// meet the condition cond heads the WHERE clause with (ending in AND; ""
// for none), in the order given.
func (s *Store) unserved(ctx context.Context, types []string, cond string) ([]string, error) {
	if len(types) == 0 {
		return nil, nil
	}
	return queryAll(ctx, s.db, "checking which task types a live instance serves", `
SELECT t.task_type
FROM unnest($1::text[]) WITH ORDINALITY AS t(task_type, n)
WHERE `+cond+notServedSQL("t.task_type")+`
ORDER BY t.n`, func(r pgx.Row) (string, error) {
		var tt string
		return tt, r.Scan(&tt)
	}, types)
}

// SetApplicationName names the store's session (application_name), as
// pg_stat_activity shows it.
func (s *Store) SetApplicationName(ctx context.Context, name string) error {
	_, err := s.db.Exec(ctx, `SELECT set_config('application_name', $1, false)`, name)
	return wrap("naming the session", err)
}

// ReloadChannel is the NOTIFY channel of spec reloads: `wf reload` sends
// "request:<id>:<service>" on it; every wf run instance listens on its
// served-types connection, reloads its specs and answers
// "reply:<id>:<owner>:ok:<task types>" or "reply:<id>:<owner>:error:<why>".
const ReloadChannel = "wf_reload"

// maxReplyBytes keeps a reply under NOTIFY's 8000-byte payload limit.
const maxReplyBytes = 7000

// RequestReload asks every live instance of service to reload its specs
// (the request id lets the caller tell the answers to its request).
func (s *Store) RequestReload(ctx context.Context, service, id string) error {
	_, err := s.db.Exec(ctx, `SELECT pg_notify($1, $2)`, ReloadChannel, "request:"+id+":"+service)
	return wrap("requesting a spec reload", err)
}

// ReplyReload answers request id for instance owner: ok with what it
// serves now, or the error that kept the old specs.
func (s *Store) ReplyReload(ctx context.Context, id, owner string, ok bool, message string) error {
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	payload := "reply:" + id + ":" + owner + ":" + outcome + ":" + message
	if len(payload) > maxReplyBytes {
		payload = payload[:maxReplyBytes] + "…"
	}
	_, err := s.db.Exec(ctx, `SELECT pg_notify($1, $2)`, ReloadChannel, payload)
	return wrap("answering a spec reload request", err)
}

// ServingInstance is a live instance as its served-types connection shows
// it.
type ServingInstance struct {
	// Name is what follows "wf-serves:" in its application_name:
	// "<service>:<owner>", cut at 53 bytes as PostgreSQL cuts the name.
	Name string
	// Legacy: an election connection with no served-types connection
	// beside it (a wf of an earlier version, or one still starting).
	Legacy bool
}

// ServingInstances lists the live wf run instances of service (every
// service when empty): those with a served-types connection, and those
// with only an election connection (Legacy).
func (s *Store) ServingInstances(ctx context.Context, service string) ([]ServingInstance, error) {
	return queryAll(ctx, s.db, "listing the live instances", `
SELECT DISTINCT substr(a.application_name, 11) AS name,
       a.application_name LIKE 'wf-leader:%' AS legacy
FROM pg_stat_activity a
WHERE a.datname = current_database()
  AND (a.application_name LIKE 'wf-serves:%'
       OR (a.application_name LIKE 'wf-leader:%'
           AND NOT EXISTS (SELECT 1 FROM pg_stat_activity b
                           WHERE b.datname = current_database()
                             AND b.application_name = 'wf-serves:' || substr(a.application_name, 11))))
  AND ($1 = '' OR starts_with(substr(a.application_name, 11), $1 || ':'))
ORDER BY name`, func(r pgx.Row) (ServingInstance, error) {
		var x ServingInstance
		return x, r.Scan(&x.Name, &x.Legacy)
	}, service)
}
