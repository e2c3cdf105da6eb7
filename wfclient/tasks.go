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
	var s Submission
	err := c.do(ctx, "POST", "/tasks", nil, r, &s)
	return s, err
}

// Get reads one task with its attempt history (GET /tasks/{id}).
func (c *Client) Get(ctx context.Context, id string) (Task, error) {
	var t Task
	err := c.do(ctx, "GET", "/tasks/"+escape(id), nil, nil, &t)
	return t, err
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
	for _, s := range p.Status {
		q.Add("status", string(s))
	}
	for _, s := range p.TaskType {
		q.Add("task_type", s)
	}
	for _, s := range p.SchemaName {
		q.Add("schema_name", s)
	}
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
	var page TaskPage
	err := c.do(ctx, "GET", "/tasks", q, nil, &page)
	return page, err
}

// Cancel cancels a PENDING or ACTIVE task (POST /tasks/{id}/cancel); a
// running one is stopped.
func (c *Client) Cancel(ctx context.Context, id string) (Task, error) {
	var t Task
	err := c.do(ctx, "POST", "/tasks/"+escape(id)+"/cancel", nil, nil, &t)
	return t, err
}

// SubmitIngestion submits a source to a collection (POST
// /ingestion/{catalog_id}/{collection_id}).
func (c *Client) SubmitIngestion(ctx context.Context, catalogID, collectionID string, r IngestionRequest) (Submission, error) {
	var s Submission
	err := c.do(ctx, "POST", "/ingestion/"+escape(catalogID)+"/"+escape(collectionID), nil, r, &s)
	return s, err
}

// EmitEvent emits an event of the caller's tenant (POST /events).
func (c *Client) EmitEvent(ctx context.Context, r EmitEventRequest) (Event, error) {
	var e Event
	err := c.do(ctx, "POST", "/events", nil, r, &e)
	return e, err
}

// Pause pauses a task type or tenant (POST /admin/pauses, admin).
func (c *Client) Pause(ctx context.Context, kind PauseKind, name, reason string) (Pause, error) {
	var p Pause
	err := c.do(ctx, "POST", "/admin/pauses", nil, map[string]string{"kind": string(kind), "name": name, "reason": reason}, &p)
	return p, err
}

// Resume lifts a pause (DELETE /admin/pauses/{kind}/{name}, admin).
func (c *Client) Resume(ctx context.Context, kind PauseKind, name string) (Pause, error) {
	var p Pause
	err := c.do(ctx, "DELETE", "/admin/pauses/"+escape(string(kind))+"/"+escape(name), nil, nil, &p)
	return p, err
}

// Pauses lists what is paused (GET /admin/pauses, admin).
func (c *Client) Pauses(ctx context.Context) ([]Pause, error) {
	var out struct {
		Items []Pause `json:"items"`
	}
	err := c.do(ctx, "GET", "/admin/pauses", nil, nil, &out)
	return out.Items, err
}

// BulkCancel cancels the tasks r matches (POST /admin/tasks/cancel, admin).
func (c *Client) BulkCancel(ctx context.Context, r BulkTasksRequest) (BulkResult, error) {
	var out BulkResult
	err := c.do(ctx, "POST", "/admin/tasks/cancel", nil, r, &out)
	return out, err
}

// BulkRequeue requeues the tasks r matches (POST /admin/tasks/requeue,
// admin).
func (c *Client) BulkRequeue(ctx context.Context, r BulkTasksRequest) (BulkResult, error) {
	var out BulkResult
	err := c.do(ctx, "POST", "/admin/tasks/requeue", nil, r, &out)
	return out, err
}
