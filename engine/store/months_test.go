package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestEnsureMonthsInsideTransactionsOnAFullPool: transactions that emit or
// enqueue (EnsureMonths) while others wait for their locks, on a pool those
// waiters fill, all finish: a month not seen before is looked up on the
// transaction's own connection, and one that must be created is created on
// a connection outside the pool. Before, the month went to the pool, whose
// every connection was held by a transaction waiting for the first: the
// ingestions of one asset hung so (api, at 2027-03-01).
func TestEnsureMonthsInsideTransactionsOnAFullPool(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	for name, at := range map[string]time.Time{
		"existing month": clock.Now(),                                  // made by the migrations
		"missing month":  time.Date(2093, 7, 14, 0, 0, 0, 0, time.UTC), // no partition that far ahead
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg, err := pgxpool.ParseConfig(url)
			require.NoError(t, err)
			const txs = 3
			cfg.MaxConns = txs // every connection goes to a transaction
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			defer pool.Close()
			st := store.New(pool) // a new store: it knows no month yet
			watch, err := pgx.Connect(ctx, url)
			require.NoError(t, err)
			defer watch.Close(context.Background())

			// The first transaction takes the lock, waits until the others
			// queue behind it holding the rest of the pool, then ensures the
			// month; each of the others does the same once it has the lock.
			first := make(chan struct{})
			errs := make(chan error, txs)
			var wg sync.WaitGroup
			for i := range txs {
				wg.Go(func() {
					errs <- st.InTx(ctx, func(tx *store.Store) error {
						if i > 0 {
							<-first
						}
						if _, err := tx.DB().Exec(ctx, `SELECT pg_advisory_xact_lock(4242)`); err != nil {
							return err
						}
						if i == 0 {
							close(first)
							if err := waitForWaiters(ctx, watch, txs-1); err != nil {
								return err
							}
						}
						return tx.EnsureMonths(ctx, at)
					})
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			var exists bool
			key := at.UTC().Format("2006_01")
			require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('tasks.tasks_p'||$1) IS NOT NULL AND to_regclass('tasks.events_p'||$1) IS NOT NULL`, key).Scan(&exists))
			require.True(t, exists)
		})
	}
}

// waitForWaiters waits until n sessions wait for an advisory lock.
func waitForWaiters(ctx context.Context, conn *pgx.Conn, n int) error {
	for {
		var waiting int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting); err != nil {
			return fmt.Errorf("error counting lock waiters: %w", err)
		}
		if waiting >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("error waiting for %d lock waiters (%d): %w", n, waiting, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
