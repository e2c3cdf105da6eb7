package events_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
)

// TestNewSubscriptionSeesEventsWrittenAfterItRuns: during a rolling deploy
// that adds a Subscription, an instance still on the old specs claims the
// events the new subscription wants before the new instance does. It must
// not delete them: it hands them back until they are UnmatchedGrace old, and
// the new instance, whose subscription runs from before they were written,
// creates their tasks.
func TestNewSubscriptionSeesEventsWrittenAfterItRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	old, err := spec.Compile([]spec.Source{{Name: "old.yaml", Data: []byte(consumerTypes)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	require.Empty(t, old.Subscriptions())
	fake := clock.NewFake(clock.Now().Add(time.Minute))

	// The new instance runs (its consumer has run: the outbox is empty),
	// then events are written, and an old instance's consumer claims first.
	updated := b.consumer(t, "new", fake, nil)
	_, err = updated.RunOnce(b.ctx)
	require.NoError(t, err)
	b.emitItems(t, 0, 4)
	oldBundle := *b
	oldBundle.specs, oldBundle.client = old, client.New(b.store, old)
	stale := oldBundle.consumer(t, "old", fake, nil)
	res, err := stale.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, events.ConsumerResult{Claimed: 4, Held: 4}, res)
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM tasks.events WHERE status = 'PENDING' AND attempts = 0`),
		"the old instance deleted the events the new subscription wants (or counted an attempt)")

	// The old instance claims them no more before the grace ends (the
	// deploy goes on); then the new instance takes them.
	res, err = stale.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Zero(t, res.Claimed, "a held event was claimed again before the grace ended")
	fake.Advance(events.DefaultUnmatchedGrace)
	_, err = updated.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'on_item'`),
		"the events written after the new subscription ran did not reach it")
	require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.events`))
}

// TestUnmatchedEventHeldOnceThenDeleted: an event no subscription wants costs
// one hand-back and one deletion, never a claim loop: the consumer hands a
// young one back, due when it is UnmatchedGrace old, claims it again only
// then and deletes it; one older than the grace is deleted at once. The
// grace is configurable.
func TestUnmatchedEventHeldOnceThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	fake := clock.NewFake(clock.Now().Add(time.Minute)) // the events written now are due
	const grace = 3 * time.Minute
	c := b.consumer(t, "c", fake, func(cfg *events.ConsumerConfig) { cfg.UnmatchedGrace = grace })
	_, err := b.emitter.Emit(b.ctx, events.Event{Type: "nobody.cares"})
	require.NoError(t, err)

	res, err := c.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, events.ConsumerResult{Claimed: 1, Held: 1}, res)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.events
WHERE status = 'PENDING' AND attempts = 0 AND run_after = created_at + $1::interval`, grace))
	for range 3 {
		res, err = c.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Zero(t, res.Claimed, "the held event was claimed again before the grace ended")
	}

	fake.Advance(grace)
	res, err = c.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, events.ConsumerResult{Claimed: 1, Consumed: 1}, res)
	require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.events`))

	// An unmatched event already older than the grace goes at once.
	_, err = b.store.DB().Exec(b.ctx, `
INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, status, run_after)
VALUES (tasks.uuid_v7($1), $1, 'nobody.cares', 'PLATFORM', 'system', 'PENDING', $1)`, fake.Now().Add(-grace-time.Second))
	require.NoError(t, err)
	res, err = c.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, events.ConsumerResult{Claimed: 1, Consumed: 1}, res)
	require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.events`))
}
