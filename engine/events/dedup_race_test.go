package events_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestDedupRacesTheHolder: eight callers ask, 150 times each, for a task (or
// an event) under one dedup key while its holder keeps finishing (a
// completer marks every live task of the key COMPLETED, a consumer
// acknowledges every event of the key, as fast as they can). Each call
// either writes a new one or returns the live one; none fails with "the one
// holding it just finished" — that race is the client's and the emitter's
// to retry (store.InsertSettled) — and at most one under the key is ever
// live. Each call also carries one with no key: a retry must not write it
// twice.
func TestDedupRacesTheHolder(t *testing.T) {
	t.Parallel()
	set, err := spec.Compile([]spec.Source{{Name: "s.yaml", Data: []byte("kind: TaskType\nname: job\nhandler: {builtin: noop}\n")}},
		spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		// table holds what the calls write.
		table string
		// finish frees the key: what a completer or a consumer does.
		finish string
		// call writes one under the key "k" and one with no key; it
		// returns the id of the first when the call wrote it, else "".
		call func(ctx context.Context, pool *pgxpool.Pool) (string, error)
	}{
		{
			name: "tasks", table: "tasks.tasks",
			finish: `UPDATE tasks.tasks SET status = 'COMPLETED', finished_at = now() WHERE dedup_key = 'k' AND status IN ('PENDING', 'ACTIVE')`,
			call: func(ctx context.Context, pool *pgxpool.Pool) (string, error) {
				res, err := client.New(store.New(pool), set).EnqueueMany(ctx, []client.Request{{TaskType: "job", DedupKey: "k"}, {TaskType: "job"}})
				if err != nil || res[0].Duplicate {
					return "", err
				}
				return res[0].Task.ID.String(), nil
			},
		},
		{
			name: "events", table: "tasks.events",
			finish: `DELETE FROM tasks.events WHERE dedup_key = 'k'`,
			call: func(ctx context.Context, pool *pgxpool.Pool) (string, error) {
				res, err := events.NewEmitter(store.New(pool)).EmitMany(ctx, []events.Event{{Type: "catalog.changed", DedupKey: "k"}, {Type: "catalog.changed"}})
				if err != nil || res[0].Duplicate {
					return "", err
				}
				return res[0].Event.ID.String(), nil
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := dbtest.NewPool(t)
			ctx := context.Background()
			stop := make(chan struct{})
			finisherDone := make(chan struct{})
			go func() {
				defer close(finisherDone)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := pool.Exec(ctx, tc.finish); err != nil {
						t.Errorf("finishing the holder: %v", err)
						return
					}
				}
			}()
			const callers, calls = 8, 150
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []error
			written := map[string]bool{}
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range calls {
						id, err := tc.call(ctx, pool)
						mu.Lock()
						if err != nil {
							failures = append(failures, err)
						} else if id != "" {
							written[id] = true
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(stop)
			<-finisherDone
			if len(failures) > 0 {
				t.Fatalf("%d of %d calls failed; the first: %v", len(failures), callers*calls, failures[0])
			}
			require.NotEmpty(t, written)
			var n, live int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status IN ('PENDING', 'ACTIVE', 'PROCESSING'))
				FROM `+tc.table+` WHERE dedup_key = 'k'`).Scan(&n, &live))
			require.LessOrEqual(t, live, 1)
			if tc.name == "tasks" {
				require.Equal(t, len(written), n, "every task written under the key is there")
			}
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+tc.table+` WHERE dedup_key IS NULL`).Scan(&n))
			require.Equal(t, callers*calls, n, "each keyless one once")
			t.Logf("%d written under the key, %d answered with the live one", len(written), callers*calls-len(written))
		})
	}
}
