package wfclient

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Enqueue creates a task (POST /tasks). A SYNCHRONOUS type runs at once
// and its outputs come back in the submission.
func (c *Client) Enqueue(ctx context.Context, r EnqueueRequest) (Submission, error) {
	return call[Submission](ctx, c, "POST", "/tasks", nil, r)
}

// Get reads one task with its attempt history (GET /tasks/{id}).
func (c *Client) Get(ctx context.Context, id string) (Task, error) {
	return call[Task](ctx, c, "GET", "/tasks/"+escape(id), nil, nil)
}

// Wait polls a task every poll (default 250 ms, starting faster) until it
// ends or ctx is done, and returns its last state.
func (c *Client) Wait(ctx context.Context, id string, poll time.Duration) (Task, error) {
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	delay := min(poll, 50*time.Millisecond)
	for {
		t, err := c.Get(ctx, id)
		if err != nil || t.Status.Terminal() {
			return t, err
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return t, fmt.Errorf("error waiting for task %s (still %s): %w", id, t.Status, ctx.Err())
		case <-timer.C:
		}
		delay = min(delay*2, poll)
	}
}

// List returns one page of tasks, newest first (GET /tasks).
func (c *Client) List(ctx context.Context, p ListParams) (TaskPage, error) {
	q := url.Values{}
	addEach(q, "status", p.Status)
	addEach(q, "task_type", p.TaskType)
	addEach(q, "schema_name", p.SchemaName)
	if p.CreatedFrom != nil {
		q.Set("created_from", p.CreatedFrom.UTC().Format(time.RFC3339Nano))
	}
	if p.CreatedTo != nil {
		q.Set("created_to", p.CreatedTo.UTC().Format(time.RFC3339Nano))
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return call[TaskPage](ctx, c, "GET", "/tasks", q, nil)
}

// addEach adds each of values to q under key (a repeated query parameter).
func addEach[S ~string](q url.Values, key string, values []S) {
	for _, v := range values {
		q.Add(key, string(v))
	}
}

// Cancel cancels a PENDING or ACTIVE task (POST /tasks/{id}/cancel); a
// running one is stopped.
func (c *Client) Cancel(ctx context.Context, id string) (Task, error) {
	return call[Task](ctx, c, "POST", "/tasks/"+escape(id)+"/cancel", nil, nil)
}

// SubmitIngestion submits a source to a collection (POST
// /ingestion/{catalog_id}/{collection_id}).
func (c *Client) SubmitIngestion(ctx context.Context, catalogID, collectionID string, r IngestionRequest) (Submission, error) {
	return call[Submission](ctx, c, "POST", "/ingestion/"+escape(catalogID)+"/"+escape(collectionID), nil, r)
}

// EmitEvent emits an event of the caller's tenant (POST /events).
func (c *Client) EmitEvent(ctx context.Context, r EmitEventRequest) (Event, error) {
	return call[Event](ctx, c, "POST", "/events", nil, r)
}

// Pause pauses a task type or tenant (POST /admin/pauses, admin).
func (c *Client) Pause(ctx context.Context, kind PauseKind, name, reason string) (Pause, error) {
	return call[Pause](ctx, c, "POST", "/admin/pauses", nil, map[string]string{"kind": string(kind), "name": name, "reason": reason})
}

// Resume lifts a pause (DELETE /admin/pauses/{kind}/{name}, admin).
func (c *Client) Resume(ctx context.Context, kind PauseKind, name string) (Pause, error) {
	return call[Pause](ctx, c, "DELETE", "/admin/pauses/"+escape(string(kind))+"/"+escape(name), nil, nil)
}

// Pauses lists what is paused (GET /admin/pauses, admin).
func (c *Client) Pauses(ctx context.Context) ([]Pause, error) {
	page, err := call[struct {
		Items []Pause `json:"items"`
	}](ctx, c, "GET", "/admin/pauses", nil, nil)
	return page.Items, err
}

// BulkCancel cancels the tasks r matches (POST /admin/tasks/cancel, admin).
func (c *Client) BulkCancel(ctx context.Context, r BulkTasksRequest) (BulkResult, error) {
	return call[BulkResult](ctx, c, "POST", "/admin/tasks/cancel", nil, r)
}

// BulkRequeue requeues the tasks r matches (POST /admin/tasks/requeue,
// admin).
func (c *Client) BulkRequeue(ctx context.Context, r BulkTasksRequest) (BulkResult, error) {
	return call[BulkResult](ctx, c, "POST", "/admin/tasks/requeue", nil, r)
}
