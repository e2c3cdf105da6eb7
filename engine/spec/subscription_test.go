package spec

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wftype"
)

const subscriptionSpecs = `
kind: TaskType
name: cleanup
handler: {builtin: noop}
inputs:
  type: object
  required: [catalog_id]
  properties:
    catalog_id: {type: string}
    hard: {type: boolean}
    at: {type: string}
---
kind: Subscription
name: cleanup-on-delete
event_type: "catalog.*"
when: 'event.payload.hard == true'
task_type: cleanup
inputs:
  catalog_id: 'event.payload.catalog_id'
  hard: 'event.payload.hard'
  at: 'event.created_at'
---
kind: Subscription
name: exact
event_type: catalog.deleted
task_type: cleanup
schema_name: '"s_" + event.payload.catalog_id'
inputs:
  catalog_id: 'event.payload.catalog_id'
dedup_key: 'event.payload.once == true ? "" : "exact:" + event.event_id'
`

// compileSubscriptions compiles subscriptionSpecs and returns the set and
// its two subscriptions, the glob and the exact one.
func compileSubscriptions(t *testing.T) (set *Set, glob, exact *Subscription) {
	t.Helper()
	set = compileYAML(t, subscriptionSpecs)
	subs := set.Subscriptions()
	require.Len(t, subs, 2)
	return set, subs[0], subs[1]
}

func TestSubscriptionMatches(t *testing.T) {
	t.Parallel()
	set, glob, exact := compileSubscriptions(t)
	require.True(t, glob.IsGlob())
	require.False(t, exact.IsGlob())

	for eventType, want := range map[string]bool{
		"catalog.deleted": true, "catalog.created": true, "catalog.": true,
		"catalog": false, "catalogs.deleted": false, "catalog.a/b": false, "collection.deleted": false,
	} {
		require.Equal(t, want, glob.Matches(eventType), eventType)
	}
	require.True(t, exact.Matches("catalog.deleted"))
	require.False(t, exact.Matches("catalog.deleted.x"))
	require.False(t, exact.Matches("catalog.*"))

	names := func(subs []*Subscription) []string {
		var out []string
		for _, s := range subs {
			out = append(out, s.Name())
		}
		return out
	}
	require.Equal(t, []string{"cleanup-on-delete", "exact"}, names(set.SubscriptionsFor("catalog.deleted")))
	require.Equal(t, []string{"cleanup-on-delete"}, names(set.SubscriptionsFor("catalog.created")))
	require.Empty(t, set.SubscriptionsFor("task.failed"))
}

func TestSubscriptionEvaluate(t *testing.T) {
	t.Parallel()
	_, glob, exact := compileSubscriptions(t)
	created := time.Date(2026, 2, 26, 18, 9, 4, 0, time.UTC)
	event := func(payload map[string]any) map[string]any {
		return map[string]any{
			"event_id": "019e6318-0000-7000-8000-000000000001", "event_type": "catalog.deleted",
			"scope": wftype.ScopeCatalog, "schema_name": "s_abc", "payload": payload, "created_at": created,
		}
	}

	t.Run("CreatesTheTask", func(t *testing.T) {
		t.Parallel()
		task, ok, err := glob.Evaluate(event(map[string]any{"hard": true, "catalog_id": "abc"}))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, SubscriptionTask{
			TaskType:   "cleanup",
			SchemaName: "s_abc",
			Inputs:     map[string]any{"catalog_id": "abc", "hard": true, "at": "2026-02-26T18:09:04Z"},
			DedupKey:   "evt:019e6318-0000-7000-8000-000000000001:cleanup",
		}, task)
	})

	t.Run("WhenFalse", func(t *testing.T) {
		t.Parallel()
		_, ok, err := glob.Evaluate(event(map[string]any{"hard": false, "catalog_id": "abc"}))
		require.NoError(t, err)
		require.False(t, ok)
		_, ok, err = glob.Evaluate(event(nil))
		require.NoError(t, err)
		require.False(t, ok, "a missing payload field is not true")
	})

	t.Run("OtherEventType", func(t *testing.T) {
		t.Parallel()
		ev := event(map[string]any{"catalog_id": "abc"})
		ev["event_type"] = "collection.deleted"
		_, ok, err := exact.Evaluate(ev)
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("CustomSchemaNameAndDedupKey", func(t *testing.T) {
		t.Parallel()
		task, ok, err := exact.Evaluate(event(map[string]any{"catalog_id": "xyz"}))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "s_xyz", task.SchemaName)
		require.Equal(t, "exact:019e6318-0000-7000-8000-000000000001", task.DedupKey)
		task, ok, err = exact.Evaluate(event(map[string]any{"catalog_id": "xyz", "once": true}))
		require.NoError(t, err)
		require.True(t, ok)
		require.Empty(t, task.DedupKey, `"" means no dedup`)
	})

	t.Run("EventAsJSON", func(t *testing.T) {
		t.Parallel()
		ev := map[string]any{
			"event_id": "e1", "event_type": "catalog.deleted", "schema_name": "s_abc",
			"payload": json.RawMessage(`{"hard": true, "catalog_id": "abc"}`), "created_at": "2026-02-26T18:09:04.5+01:00",
		}
		task, ok, err := glob.Evaluate(ev)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "2026-02-26T18:09:04.5+01:00", task.Inputs["at"])
	})

	t.Run("InputsCheckedAgainstTheTaskType", func(t *testing.T) {
		t.Parallel()
		_, _, err := glob.Evaluate(event(map[string]any{"hard": true, "catalog_id": 12}))
		require.ErrorContains(t, err, "error creating a cleanup task for subscription cleanup-on-delete")
		require.ErrorContains(t, err, "/catalog_id: expected string, got number")
	})

	t.Run("BadEvent", func(t *testing.T) {
		t.Parallel()
		for _, ev := range []map[string]any{
			{"event_type": 3},
			{"event_type": "catalog.deleted", "payload": "text"},
			{"event_type": "catalog.deleted", "created_at": "yesterday"},
			{"event_type": "catalog.deleted", "created_at": 12},
		} {
			_, _, err := glob.Evaluate(ev)
			require.ErrorContains(t, err, "error evaluating subscription cleanup-on-delete", "%v", ev)
		}
	})

	t.Run("EmptySchemaName", func(t *testing.T) {
		t.Parallel()
		ev := event(map[string]any{"hard": true, "catalog_id": "abc"})
		delete(ev, "schema_name")
		_, _, err := glob.Evaluate(ev)
		require.ErrorContains(t, err, "returned an empty string")
	})
}

func TestSubscriptionAccessors(t *testing.T) {
	t.Parallel()
	subs := compileYAML(t, subscriptionSpecs).Subscriptions()
	glob := subs[0]
	require.Equal(t, "cleanup-on-delete", glob.Name())
	require.Equal(t, "catalog.*", glob.EventType())
	require.Equal(t, "cleanup", glob.TaskType())
	require.Equal(t, "event.payload.hard == true", glob.WhenExpr())
	require.Equal(t, "event.schema_name", glob.SchemaNameExpr())
	require.Equal(t, `"evt:" + event.event_id + ":" + task_type`, glob.DedupKeyExpr())
	exprs := glob.InputExprs()
	require.Equal(t, "event.payload.catalog_id", exprs["catalog_id"])
	exprs["catalog_id"] = "changed"
	require.Equal(t, "event.payload.catalog_id", glob.InputExprs()["catalog_id"])
	require.Empty(t, subs[1].WhenExpr())
}

// TestSubscriptionPayloadSchema: a subscription that declares its events'
// payload fails an event whose payload breaks it, instead of creating a task
// from inputs its expressions were not checked for.
func TestSubscriptionPayloadSchema(t *testing.T) {
	t.Parallel()
	set := compileYAML(t, `
kind: TaskType
name: tiles
handler: {builtin: noop}
inputs:
  type: object
  properties:
    collection: {type: string}
---
kind: Subscription
name: tiles-on-ingest
event_type: ingestion.completed
payload:
  type: object
  required: [collection_id]
  properties:
    collection_id: {type: string}
task_type: tiles
inputs:
  collection: event.payload.collection_id
`)
	sub := set.Subscriptions()[0]
	require.JSONEq(t, `{"type": "object", "required": ["collection_id"], "properties": {"collection_id": {"type": "string"}}}`, string(sub.PayloadSchema()))
	event := func(payload map[string]any) map[string]any {
		return map[string]any{"event_id": "e1", "event_type": "ingestion.completed", "scope": "CATALOG",
			"schema_name": "s_demo", "payload": payload, "created_at": time.Now()}
	}
	task, ok, err := sub.Evaluate(event(map[string]any{"collection_id": "roads"}))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, map[string]any{"collection": "roads"}, task.Inputs)

	_, ok, err = sub.Evaluate(event(map[string]any{"collection_id": 7}))
	require.ErrorContains(t, err, "the event's payload does not match the subscription's payload schema")
	require.False(t, ok)
}
