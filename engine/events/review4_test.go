package events_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/spec"
)

// Since c74f045 every instance consumes the outbox and deletes the events its
// own subscriptions do not match. During a rolling deploy that adds a
// Subscription, an instance still on the old spec set deletes the events the
// new subscription wants, though they were written after an instance runs it
// (the README: "a subscription added later sees the events written from when
// an instance runs it"): the new subscription never gets those tasks.
func TestReview4NewSubscriptionSeesEventsWrittenAfterItRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	// The old spec set: the same task types, no subscription yet.
	old, err := spec.Compile([]spec.Source{{Name: "old.yaml", Data: []byte(`kind: TaskType
name: on_item
handler: {builtin: noop}
inputs:
  type: object
  required: [n]
  properties:
    n: {type: integer}
---
kind: TaskType
name: audit
handler: {builtin: noop}
`)}}, spec.Options{Builtins: []string{"noop"}})
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
	_, err = stale.RunOnce(b.ctx)
	require.NoError(t, err)
	_, err = updated.RunOnce(b.ctx)
	require.NoError(t, err)

	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'on_item'`),
		"the events written after the new subscription ran were deleted by an instance without it")
}
