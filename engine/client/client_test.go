package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// specs are two task types that judge the same inputs differently: resize
// wants a positive n and keys its tasks by tenant and n; strict wants an m.
const specs = `kind: TaskType
name: resize
scope: CATALOG
inputs:
  type: object
  required: [n]
  properties:
    n: {type: integer, minimum: 1}
dedup_key: 'schema_name + ":" + string(inputs.n)'
handler: {builtin: noop}
---
kind: TaskType
name: strict
inputs:
  type: object
  required: [m]
handler: {builtin: noop}
`

// setup returns a client on a database of its own.
func setup(t *testing.T) (*client.Client, *store.Store) {
	t.Helper()
	set, err := spec.Compile([]spec.Source{{Name: "s.yaml", Data: []byte(specs)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	st := dbtest.NewStore(t)
	return client.New(st, set), st
}

// countTasks counts the tasks in the database.
func countTasks(t *testing.T, st *store.Store) int {
	t.Helper()
	var n int
	require.NoError(t, st.DB().QueryRow(context.Background(), `SELECT count(*) FROM tasks.tasks`).Scan(&n))
	return n
}

// TestEnqueueManyChecksEveryRequest: a batch (large enough to go through
// COPY) whose requests share their inputs' text is checked as if each were
// alone: one request of another type with the same text fails the call as
// that type's schema says, one with other inputs fails it at its own
// violation, and neither writes anything; the dedup key, which depends on
// the tenant, is still each request's own.
func TestEnqueueManyChecksEveryRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl, st := setup(t)
	batch := func() []client.Request {
		reqs := make([]client.Request, 1000)
		for i := range reqs {
			reqs[i] = client.Request{TaskType: "resize", SchemaName: fmt.Sprintf("tenant_%d", i%3), Inputs: []byte(`{"n": 2}`)}
		}
		return reqs
	}

	reqs := batch()
	reqs[700] = client.Request{TaskType: "strict", Inputs: []byte(`{"n": 2}`)} // valid for resize, not for strict
	_, err := cl.EnqueueMany(ctx, reqs)
	var ve *client.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "strict", ve.TaskType)
	require.Len(t, ve.Inputs, 1)
	require.Equal(t, 0, countTasks(t, st))

	reqs = batch()
	reqs[900].Inputs = []byte(`{"n": 0}`)
	_, err = cl.EnqueueMany(ctx, reqs)
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "resize", ve.TaskType)
	require.Equal(t, "/n", ve.Inputs[0].Pointer)
	require.Equal(t, 0, countTasks(t, st))

	reqs = batch()
	reqs[500].Inputs = []byte(`{"n": 2`)
	_, err = cl.EnqueueMany(ctx, reqs)
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "inputs", ve.Field)
	require.Equal(t, 0, countTasks(t, st))

	res, err := cl.EnqueueMany(ctx, batch())
	require.NoError(t, err)
	for i, r := range res {
		want := fmt.Sprintf("tenant_%d:2", i%3)
		require.NotNil(t, r.Task.DedupKey, "task %d", i)
		require.Equal(t, want, *r.Task.DedupKey, "task %d", i)
		require.Equal(t, i >= 3, r.Duplicate, "task %d", i) // the first of each tenant takes its key
		require.Equal(t, res[i%3].Task.ID, r.Task.ID, "task %d", i)
	}
	require.Equal(t, 3, countTasks(t, st))
}

// TestCheckIsEnqueuesVerdict: Check, which remembers nothing, answers
// each request as EnqueueMany's shared checks do.
func TestCheckIsEnqueuesVerdict(t *testing.T) {
	t.Parallel()
	cl, _ := setup(t)
	for _, tc := range []struct {
		req client.Request
		ok  bool
	}{
		{client.Request{TaskType: "resize", SchemaName: "a", Inputs: []byte(`{"n": 2}`)}, true},
		{client.Request{TaskType: "strict", Inputs: []byte(`{"n": 2}`)}, false},
		{client.Request{TaskType: "resize", SchemaName: "a", Inputs: []byte(`{"n": 0}`)}, false},
		{client.Request{TaskType: "resize", Inputs: []byte(`{"n": 2}`)}, false}, // a CATALOG task needs its tenant
	} {
		err := cl.Check(tc.req)
		_, enqErr := cl.EnqueueMany(context.Background(), []client.Request{tc.req, tc.req})
		if tc.ok {
			require.NoError(t, err, "%+v", tc.req)
			require.NoError(t, enqErr, "%+v", tc.req)
			continue
		}
		var ve *client.ValidationError
		require.ErrorAs(t, err, &ve, "%+v", tc.req)
		require.True(t, errors.As(enqErr, &ve), "%+v", tc.req)
		require.Equal(t, err.Error(), enqErr.Error())
	}
}

// TestEnqueueUniqueOverride: a request's Unique (a subscription's own)
// keeps its key after the task completed, where the task type declares
// none; without it the key is free once the task ended.
func TestEnqueueUniqueOverride(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl, st := setup(t)
	req := func(n int, unique *spec.Unique) client.Request {
		return client.Request{TaskType: "resize", SchemaName: "s1", Inputs: []byte(fmt.Sprintf(`{"n":%d}`, n)), Unique: unique}
	}
	hour := &spec.Unique{Period: time.Hour, States: []wftype.TaskStatus{wftype.StatusCompleted}}
	for _, r := range []client.Request{req(1, hour), req(2, nil)} {
		res, err := cl.Enqueue(ctx, r)
		require.NoError(t, err)
		require.False(t, res.Duplicate)
	}
	dbtest.CompleteTasks(t, ctx, st, "resize", 2)
	kept, err := cl.Enqueue(ctx, req(1, nil))
	require.NoError(t, err)
	require.True(t, kept.Duplicate, "the key was taken with a period")
	require.Equal(t, wftype.StatusCompleted, kept.Task.Status)
	dup, err := cl.Duplicate(ctx, req(1, nil))
	require.NoError(t, err)
	require.NotNil(t, dup)
	free, err := cl.Enqueue(ctx, req(2, nil))
	require.NoError(t, err)
	require.False(t, free.Duplicate)
	require.Equal(t, 3, countTasks(t, st))
}

// TestEnqueueOnDuplicate: a task type's on_duplicate reaches the store: a
// second enqueue of the key replaces the queued task.
func TestEnqueueOnDuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set, err := spec.Compile([]spec.Source{{Name: "s.yaml", Data: []byte(`kind: TaskType
name: sync_account
handler: {builtin: noop}
dedup_key: '"sync:" + string(inputs.account)'
on_duplicate: replace_queued
`)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	st := dbtest.NewStore(t)
	cl := client.New(st, set)
	req := client.Request{TaskType: "sync_account", Inputs: []byte(`{"account": 7}`)}
	first, err := cl.Enqueue(ctx, req)
	require.NoError(t, err)
	second, err := cl.Enqueue(ctx, req)
	require.NoError(t, err)
	require.False(t, second.Duplicate)
	require.NotNil(t, second.Replaced)
	require.Equal(t, first.Task.ID, *second.Replaced)
	got, err := st.GetTask(ctx, first.Task.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCancelled, got.Status)
}
