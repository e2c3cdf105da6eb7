package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// FeatureLoad is one ingestion's writes into a feature table, in one
// transaction: its batches are merged as MergeFeatures merges one
// (Merge), and become visible together when the load commits (Commit), or
// not at all (Rollback, or a load whose connection breaks). A cancelled or
// failed load therefore leaves the collection as it was: no version of it
// is seen, no current version closed, its content version unchanged.
//
// The table's advisory lock is taken when the load begins and held until it
// ends: other writers of the collection (another load, a merge) wait for the
// whole load, not for one batch, and the load's transaction times (read per
// batch, after the lock) all come before theirs, which keeps the commit
// order in transaction-time order (see MergeFeatures). Readers are never
// blocked: they see the collection as it was until the commit.
//
// A FeatureLoad is used by one goroutine at a time.
type FeatureLoad struct {
	t       FeatureTable
	tx      pgx.Tx
	written bool
	done    bool
	// ids holds the external ids written so far when the table was empty
	// as the load began (nil otherwise): an id not in it has no current
	// version, so it is not looked up.
	ids *idFilter
}

// BeginFeatureLoad starts a load into t: it opens the transaction and takes
// t's advisory lock (waiting for any other writer of t to finish).
func (s *Store) BeginFeatureLoad(ctx context.Context, t FeatureTable) (*FeatureLoad, error) {
	if _, err := NewFeatureTable(t.Schema, t.Collection); err != nil {
		return nil, err
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, wrap("beginning a load into "+t.String(), err)
	}
	var empty bool
	if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM `+t.ident()+`) FROM pg_advisory_xact_lock($1)`,
		t.lockKey()).Scan(&empty); err != nil {
		rollbackQuietly(tx)
		return nil, wrap("beginning a load into "+t.String(), err)
	}
	l := &FeatureLoad{t: t, tx: tx}
	if empty {
		l.ids = newIDFilter()
	}
	return l, nil
}

// Merge merges one batch of the load, as MergeFeatures does (same rules,
// outcomes and transaction time per batch), inside the load's transaction:
// a later batch of the same load sees the versions of the earlier ones.
// checked, when not nil, is CheckGeometries' answer for the batch's
// geometries, asked beforehand on another connection (so PostGIS checks
// the next batch while this one is written); nil asks it here.
func (l *FeatureLoad) Merge(ctx context.Context, versions []FeatureVersion, checked []string) ([]MergeOutcome, time.Time, error) {
	if l.done {
		return nil, time.Time{}, fmt.Errorf("error merging features into %s: the load has ended", l.t)
	}
	if len(versions) == 0 {
		return nil, time.Time{}, nil
	}
	out, txTime, err := mergeTx(ctx, l.tx, l.t, versions, checked, !l.written, l.ids)
	if err != nil {
		return nil, time.Time{}, wrap("merging features into "+l.t.String(), err)
	}
	for _, o := range out {
		if o.Action == MergeCreated || o.Action == MergeVersioned {
			l.written = true
			break
		}
	}
	return out, txTime, nil
}

// Commit makes every merged batch visible at once and releases the lock.
func (l *FeatureLoad) Commit(ctx context.Context) error {
	if l.done {
		return fmt.Errorf("error committing the load into %s: the load has ended", l.t)
	}
	l.done = true
	return wrap("committing the load into "+l.t.String(), l.tx.Commit(ctx))
}

// Rollback discards every merged batch and releases the lock; it is safe
// after Commit (it then does nothing) and on a broken connection (the
// server discards the transaction when the connection closes). It runs
// even when ctx is cancelled, for at most rollbackTimeout.
func (l *FeatureLoad) Rollback(ctx context.Context) error {
	if l.done {
		return nil
	}
	l.done = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	err := l.tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		err = nil
	}
	return wrap("rolling back the load into "+l.t.String(), err)
}

// CheckGeometries asks PostGIS whether each version's geometry is valid,
// on a connection of its own: "" for a valid one, else ST_IsValidReason's
// answer, in the order given. Its answer is what FeatureLoad.Merge takes.
func (s *Store) CheckGeometries(ctx context.Context, versions []FeatureVersion) ([]string, error) {
	reasons := make([]string, 0, len(versions))
	if len(versions) == 0 {
		return reasons, nil
	}
	rows, err := s.db.Query(ctx, checkGeometriesSQL, versionWKBs(versions))
	if err == nil {
		reasons, err = scanReasons(rows, reasons)
	}
	if err == nil && len(reasons) != len(versions) {
		err = fmt.Errorf("PostGIS checked %d geometries of %d", len(reasons), len(versions))
	}
	return reasons, wrap("checking geometries", err)
}

// versionWKBs returns the versions' WKB geometries, the parameter of
// checkGeometriesSQL.
func versionWKBs(versions []FeatureVersion) [][]byte {
	wkbs := make([][]byte, len(versions))
	for i := range versions {
		wkbs[i] = versions[i].WKB
	}
	return wkbs
}

// scanReasons appends the verdicts checkGeometriesSQL returned and closes rows.
func scanReasons(rows pgx.Rows, reasons []string) ([]string, error) {
	defer rows.Close()
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return reasons, err
		}
		reasons = append(reasons, r)
	}
	return reasons, rows.Err()
}

// rollbackTimeout bounds a rollback on a cancelled context.
const rollbackTimeout = 10 * time.Second

// rollbackQuietly ends tx after a failure that is being reported already.
func rollbackQuietly(tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	_ = tx.Rollback(ctx)
}
