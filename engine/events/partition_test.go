package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestConsumerCreatesTheMonthsPartitions: the first task of a month the
// database has no partition for yet (maintenance has not created it) is
// created by the consumer itself. The partition's DDL must not wait for the
// consumer's own transaction, which holds the outbox rows it deletes: the
// event is consumed, not handed back again and again.
func TestConsumerCreatesTheMonthsPartitions(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	now := clock.Now().UTC()
	last := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).Add(-24 * time.Hour)
	require.NoError(t, b.store.EnsureMonth(b.ctx, last))
	// Only last month's partitions: the event was emitted then.
	partitions := dbtest.Strings(t, b.ctx, b.store.DB(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace n ON n.oid = p.relnamespace
		WHERE n.nspname = 'tasks' AND p.relname IN ('tasks', 'events') AND c.relname LIKE $1`, "%_p%")
	for _, name := range partitions {
		if name != "tasks_p"+last.Format("2006_01") && name != "events_p"+last.Format("2006_01") {
			_, err := b.store.DB().Exec(b.ctx, `DROP TABLE tasks.`+name)
			require.NoError(t, err)
		}
	}
	id, err := store.NewIDAt(last)
	require.NoError(t, err)
	_, err = b.store.InsertEvents(b.ctx, []store.NewEvent{{ID: id, EventType: "stream.item", Scope: "PLATFORM", SchemaName: "system",
		Payload: json.RawMessage(`{"n": 1}`)}})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	res, err := b.consumer(t, "c1", clock.Real{}, nil).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Consumed)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.tasks`))
}
