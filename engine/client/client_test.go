package client_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestDedupRacesTheHolder: eight enqueuers ask, 150 times each, for a task
// under one dedup key while the holder keeps finishing (a completer marks
// every live task of the key COMPLETED as fast as it can). Each call either
// creates the task or returns the live one; none fails with "the task
// holding it just finished" — that race is the client's to retry — and at
// most one task under the key is ever live. Each call also carries a task
// with no key: a retry must not create it twice.
func TestDedupRacesTheHolder(t *testing.T) {
	t.Parallel()
	set, err := spec.Compile([]spec.Source{{Name: "s.yaml", Data: []byte("kind: TaskType\nname: job\nhandler: {builtin: noop}\n")}},
		spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	cl := client.New(st, set)
	ctx := context.Background()

	stop := make(chan struct{})
	completerDone := make(chan struct{})
	go func() {
		defer close(completerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := pool.Exec(ctx, `UPDATE tasks.tasks SET status = 'COMPLETED', finished_at = now()
				WHERE dedup_key = 'k' AND status IN ('PENDING', 'ACTIVE')`)
			if err != nil {
				t.Errorf("completing: %v", err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	created := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 150 {
				res, err := cl.EnqueueMany(ctx, []client.Request{{TaskType: "job", DedupKey: "k"}, {TaskType: "job"}})
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else if !res[0].Duplicate {
					created++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-completerDone
	require.Empty(t, failures)
	var n, live int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status IN ('PENDING', 'ACTIVE')) FROM tasks.tasks WHERE dedup_key = 'k'`).Scan(&n, &live))
	require.Equal(t, created, n)
	require.LessOrEqual(t, live, 1)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM tasks.tasks WHERE dedup_key IS NULL`).Scan(&n))
	require.Equal(t, 8*150, n, "each keyless task once")
	t.Logf("%d tasks created, %d answered with the live one", created, 8*150-created)
}
