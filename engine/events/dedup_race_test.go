package events_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestEmitDedupRacesTheHolder: eight emitters emit, 150 times each, an event
// under one dedup key while the holder keeps finishing (a consumer deletes
// every event of the key as fast as it can, which frees the key). Each call
// either writes the event or returns the live one; none fails with "the
// event holding it just finished" — that race is the emitter's to retry —
// and at most one event under the key is ever live. Each call also carries
// an event with no key: a retry must not write it twice.
func TestEmitDedupRacesTheHolder(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	em := events.NewEmitter(store.New(pool))
	ctx := context.Background()

	stop := make(chan struct{})
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := pool.Exec(ctx, `DELETE FROM tasks.events WHERE dedup_key = 'k'`); err != nil {
				t.Errorf("acknowledging: %v", err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	written := map[string]bool{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 150 {
				res, err := em.EmitMany(ctx, []events.Event{{Type: "catalog.changed", DedupKey: "k"}, {Type: "catalog.changed"}})
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else {
					if !res[0].Duplicate {
						written[res[0].Event.ID.String()] = true
					}
					require.False(t, res[1].Duplicate)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-consumerDone
	if len(failures) > 0 {
		t.Fatalf("%d of %d emits failed; the first: %v", len(failures), 8*150, failures[0])
	}
	require.NotEmpty(t, written)
	var live int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM tasks.events WHERE dedup_key = 'k'`).Scan(&live))
	require.LessOrEqual(t, live, 1)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM tasks.events WHERE dedup_key IS NULL`).Scan(&n))
	require.Equal(t, 8*150, n, "each keyless event once")
	t.Logf("%d events written under the key, %d answered with the live one", len(written), 8*150-len(written))
}
