package store

import (
	"context"
	"fmt"
	"time"

	"github.com/wfhq/wf/wftype"
)

// Retries of a dedup key whose holder finished while it was being inserted.
const (
	releasedAttempts  = 50
	releasedFirstWait = time.Millisecond
	releasedMaxWait   = 50 * time.Millisecond
)

// InsertSettled calls insert (InsertTasks or InsertEvents) with items and
// calls it again with those whose dedup key's holder finished between the
// insert and its look-up (released reports them: InsertResult.Released,
// EventInsertResult.Released): the key is free then, so the next insert
// takes it, or finds what another caller inserted meanwhile. Only those are
// sent again, with the same ids, so nothing is inserted twice. A holder that
// keeps finishing in that instant every time, 50 times, gives
// wftype.ErrConflict; describe names an item in that error.
func InsertSettled[T, R any](ctx context.Context, items []T, insert func(context.Context, []T) ([]R, error),
	released func(R) bool, describe func(T) string) ([]R, error) {
	results, err := insert(ctx, items)
	if err != nil {
		return nil, err
	}
	wait := releasedFirstWait
	for attempt := 1; ; attempt++ {
		var again []int
		for i, r := range results {
			if released(r) {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			return results, nil
		}
		if attempt >= releasedAttempts {
			return nil, fmt.Errorf("error inserting %s: the holder of its dedup key finished during each of %d attempts: %w",
				describe(items[again[0]]), attempt, wftype.ErrConflict)
		}
		if attempt > 2 { // a busy key: let the other callers through
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, fmt.Errorf("error inserting %s: %w", describe(items[again[0]]), ctx.Err())
			case <-timer.C:
			}
			wait = min(2*wait, releasedMaxWait)
		}
		batch := make([]T, len(again))
		for j, i := range again {
			batch[j] = items[i]
		}
		retried, err := insert(ctx, batch)
		if err != nil {
			return nil, err
		}
		for j, i := range again {
			results[i] = retried[j]
		}
	}
}
