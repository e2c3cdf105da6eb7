// Package store is wf's one boundary to PostgreSQL: every SQL statement the
// engine runs lives in this package, as plain SQL text a reader can run by
// hand, and no pgx row ever leaves it. Callers get wftype rows and sentinel
// errors (wftype.ErrNotFound, wftype.ErrConflict).
//
// Times: statements take an optional "now" (nil means the database clock),
// so tests can drive retries and leases with a controllable clock.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wfhq/wf/internal/secretbox"
	"github.com/wfhq/wf/wftype"
)

// DBTX is what the store runs statements on: a pool, a connection or a
// transaction (the caller's, for transactional enqueue).
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Channels are the NOTIFY channel names (the seed's by default).
type Channels struct {
	TaskQueued        string
	TaskStatusChanged string
	Events            string
}

// DefaultChannels are the default channel names: the seed's for tasks,
// wf_events for the outbox.
var DefaultChannels = Channels{
	TaskQueued:        "new_task_queued",
	TaskStatusChanged: "task_status_changed",
	Events:            "wf_events",
}

// LegacyEventsChannel is the outbox's channel until it was renamed
// wf_events (the seed's name, another product's). A deployment that sets it
// (channels.events) keeps it; a leader on the default channel also listens
// on it, so that instances of an earlier wf still wake it during a rolling
// upgrade.
const LegacyEventsChannel = "dynastore_events_channel"

// Store runs wf's statements on a DBTX.
type Store struct {
	db       DBTX
	channels Channels
	// root is what New was given (a pool): the months' partitions are
	// created on it, never inside a caller's transaction.
	root DBTX
	// inTx says db is a caller's transaction (WithTx).
	inTx bool
	// months are the months whose partitions are known to exist, shared by
	// every copy of the store (WithTx, WithChannels): one cache per process
	// for tasks and events alike (see EnsureMonths).
	months *monthCache
	// plans remembers when each connection last dropped its cached plans
	// (withPlanGuard), shared by every copy of the store.
	plans *planGuard
	// secrets seals the secrets the store writes and opens those it reads
	// (webhook signing secrets); nil keeps them clear.
	secrets *secretbox.Keyring
	// stepHook advances workflow runs when FinishTasks ends their steps'
	// tasks (WithStepHook); nil without workflows.
	stepHook StepHook
	// catalog is the store of the catalog's own database
	// (catalog.database_url); nil: the catalog shares this store's database.
	catalog *Store
}

// New returns a store on db with the default channel names.
func New(db DBTX) *Store {
	return &Store{db: db, channels: DefaultChannels, root: db, months: &monthCache{known: map[int]bool{}},
		plans: &planGuard{last: map[*pgx.Conn]time.Time{}}}
}

// WithChannels returns a copy of the store that notifies on the given channels.
func (s *Store) WithChannels(c Channels) *Store {
	cp := *s
	cp.channels = c
	return &cp
}

// WithSecrets returns a copy of the store that encrypts the secrets it
// writes under k's current key and decrypts those it reads with any of k's
// keys. Without it (or with nil) secrets are written clear and a sealed one
// read is an error.
func (s *Store) WithSecrets(k *secretbox.Keyring) *Store {
	cp := *s
	cp.secrets = k
	return &cp
}

// WithCatalog returns a copy of the store whose catalog lives in the
// database of c (catalog.database_url): the queue statements that read the
// tenant registry (a tenant's pause, the janitor's orphans) read it there,
// and Catalog returns c. A c on the same database as s changes nothing.
func (s *Store) WithCatalog(c *Store) *Store {
	cp := *s
	cp.catalog = c
	if c == nil || c.root == s.root {
		cp.catalog = nil
	}
	return &cp
}

// Catalog returns the store of the catalog's database: the one WithCatalog
// gave, else s itself (one database for the queue and the catalog).
func (s *Store) Catalog() *Store {
	if s.catalog != nil {
		return s.catalog
	}
	return s
}

// CatalogApart reports whether the catalog lives in a database of its own
// (WithCatalog): its writes and the queue's then never share a transaction.
func (s *Store) CatalogApart() bool { return s.catalog != nil }

// SameDatabase reports whether s and o run on the same pool (or
// connection): a transaction of one can hold statements of the other.
func (s *Store) SameDatabase(o *Store) bool { return s.root == o.root }

// Channels returns the NOTIFY channel names the store uses.
func (s *Store) Channels() Channels { return s.channels }

// WithTx returns a store whose statements run inside tx.
func (s *Store) WithTx(tx pgx.Tx) *Store {
	cp := *s
	cp.db, cp.inTx = tx, true
	return &cp
}

// inTxValue runs fn in a transaction, as InTx does, and returns what fn
// returned.
func inTxValue[T any](ctx context.Context, s *Store, fn func(tx *Store) (T, error)) (T, error) {
	var out T
	err := s.InTx(ctx, func(tx *Store) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// InTx runs fn in one transaction, committed when fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Store) error) error {
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error { return fn(s.WithTx(tx)) })
}

// DB returns what the store runs on.
func (s *Store) DB() DBTX { return s.db }

// IsUniqueViolation reports whether err is PostgreSQL's unique_violation.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// ErrUnavailable marks an error from a database that could not be reached,
// refused the connection or is shutting down, before the statement could
// run: nothing was done, and the same call may succeed later.
var ErrUnavailable = errors.New("the database is unavailable")

// wrap adds what the store was doing to a database error, and
// ErrUnavailable when the database could not be reached.
func wrap(doing string, err error) error {
	if err == nil {
		return nil
	}
	if IsUnavailable(err) {
		return fmt.Errorf("error %s: %w: %w", doing, ErrUnavailable, err)
	}
	return fmt.Errorf("error %s: %w", doing, err)
}

// ConnectFailure reports whether err is a failure to connect to a database
// and, if so, why in words that name none of its address, user or database
// (pgx's own message names them all): "refused the connection's
// credentials", "refused the connection (SQLSTATE …)" or "could not be
// reached".
func ConnectFailure(err error) (reason string, ok bool) {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return "", false
	}
	var pgErr *pgconn.PgError
	if errors.As(ce, &pgErr) {
		switch pgErr.Code {
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			return "refused the connection's credentials", true
		}
		return "refused the connection (SQLSTATE " + pgErr.Code + ")", true
	}
	return "could not be reached", true
}

// IsUnavailable reports whether err says that the database could not be
// reached before anything was sent (no connection, or one that failed
// before the statement), or refused to serve: too many connections, or a
// server starting up or shutting down.
func IsUnavailable(err error) bool {
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "53300", // too_many_connections
			"57P01", // admin_shutdown
			"57P02", // crash_shutdown
			"57P03": // cannot_connect_now
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err)
}

// queryAll runs q and scans every row it returns with scan; doing names the
// work in errors. It is the one loop over a result set for statements that
// return many rows of one type.
func queryAll[T any](ctx context.Context, db DBTX, doing, q string, scan func(pgx.Row) (T, error), args ...any) ([]T, error) {
	var out []T
	err := queryEach(ctx, db, doing, q, func(row pgx.Row) error {
		v, err := scan(row)
		if err == nil {
			out = append(out, v)
		}
		return err
	}, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// queryEach runs q and hands every row it returns to each, stopping at its
// first error; doing names the work in errors.
func queryEach(ctx context.Context, db DBTX, doing, q string, each func(pgx.Row) error, args ...any) error {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return wrap(doing, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return wrap(doing, err)
		}
	}
	return wrap(doing, rows.Err())
}

// queryOfTask runs q, which reads task id ($1, and its timestamp $2; args
// follow) left-joined to what it holds: a row per item, or one row without
// any (scan returns nil). It returns the items, and wftype.ErrNotFound when
// the task does not exist; doing names the work in errors.
func queryOfTask[T any](ctx context.Context, db DBTX, doing, q string, id uuid.UUID, scan func(pgx.Row) (*T, error), args ...any) ([]T, error) {
	rows, err := queryAll(ctx, db, doing, q, scan, append([]any{id, IDTime(id)}, args...)...)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("task %s: %w", id, wftype.ErrNotFound)
	}
	out := make([]T, 0, len(rows))
	for _, v := range rows {
		if v != nil {
			out = append(out, *v)
		}
	}
	return out, nil
}

// queryMap runs q, whose rows are (key, value) pairs, and returns them as a
// map; doing names the work in errors.
func queryMap[K comparable, V any](ctx context.Context, db DBTX, doing, q string, args ...any) (map[K]V, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, wrap(doing, err)
	}
	defer rows.Close()
	out := map[K]V{}
	for rows.Next() {
		var k K
		var v V
		if err := rows.Scan(&k, &v); err != nil {
			return nil, wrap(doing, err)
		}
		out[k] = v
	}
	return out, wrap(doing, rows.Err())
}

// scanID scans a row of one uuid column.
func scanID(row pgx.Row) (uuid.UUID, error) {
	var id uuid.UUID
	err := row.Scan(&id)
	return id, err
}

// collectIDs runs a statement returning one uuid column.
func collectIDs(ctx context.Context, s *Store, doing, q string, args ...any) ([]uuid.UUID, error) {
	return queryAll(ctx, s.db, doing, q, scanID, args...)
}
