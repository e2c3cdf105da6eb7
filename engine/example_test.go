package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// thumbnailSpec declares the example's task type; a real program keeps its
// specs in files (spec.Load) that `wf validate` checks in CI.
const thumbnailSpec = `kind: TaskType
name: thumbnail
description: Makes a thumbnail of an uploaded image.
handler: {builtin: thumbnail}
inputs:
  type: object
  required: [image]
  properties:
    image: {type: string}
---
kind: Subscription
name: thumbnail-on-upload
event_type: image.uploaded
task_type: thumbnail
inputs:
  image: 'event.payload.image'
`

// Example embeds wf in a Go program: a task type declared in a spec, a Go
// handler registered for it, one task enqueued inside the program's own
// transaction (it exists only if that transaction commits), another
// created by an event through a subscription, both run by the engine.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, databaseURL()) // your database
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := engine.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}

	// Register the Go handler, then compile the specs against its name.
	reg := builtin.NewRegistry()
	made := make(chan string, 2)
	err = reg.Register("thumbnail", func(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		var in struct {
			Image string `json:"image"`
		}
		if err := json.Unmarshal(task.Inputs, &in); err != nil {
			return nil, wftype.Permanent(err) // bad inputs: never retried
		}
		made <- in.Image
		return json.Marshal(map[string]string{"thumbnail": in.Image + ".thumb.png"})
	})
	if err != nil {
		log.Fatal(err)
	}
	specs, err := spec.Compile([]spec.Source{{Name: "thumbnails.yaml", Data: []byte(thumbnailSpec)}},
		spec.Options{Builtins: reg.Names()})
	if err != nil {
		log.Fatal(err)
	}
	eng, err := engine.New(engine.Config{
		Pool: pool, Specs: specs, Registry: reg, PollInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}

	// Enqueue inside your own transaction, beside your own writes.
	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	res, err := eng.Client().EnqueueTx(ctx, tx, client.Request{TaskType: "thumbnail", Inputs: json.RawMessage(`{"image": "cat.png"}`)})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}

	// Run the engine (wf run does the same) until the task has run.
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- eng.Run(runCtx) }()
	fmt.Println("made a thumbnail of", <-made)

	// Emit an event: the subscription turns it into a task.
	if _, err := eng.Emitter().Emit(ctx, events.Event{Type: "image.uploaded", Payload: json.RawMessage(`{"image": "dog.png"}`)}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("made a thumbnail of", <-made)

	stop() // SIGTERM: running tasks finish, outcomes are written
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	task, err := eng.Store().GetTask(ctx, res.Task.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(task.Status, string(task.Outputs))
	// Output:
	// made a thumbnail of cat.png
	// made a thumbnail of dog.png
	// COMPLETED {"thumbnail": "cat.png.thumb.png"}
}
