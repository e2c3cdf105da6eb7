// Command embed is a program outside the wf repository that embeds wf, as
// docs/clients.md describes: .ci/embed-check builds it in a throwaway module
// that imports github.com/wfhq/wf through a replace to the checkout, and
// runs it against a database of its own. It registers a builtin handler,
// enqueues a task inside its own transaction, runs the engine until the
// task is COMPLETED, and checks a webhook signature; it exits non-zero on
// any failure.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

const specs = `kind: TaskType
name: greet
description: Greets someone.
handler: {builtin: greet}
inputs:
  type: object
  required: [name]
  properties:
    name: {type: string}
`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dbURL, drop, err := ownDatabase(ctx, os.Getenv("WF_TEST_DATABASE_URL"))
	if err != nil {
		return err
	}
	defer drop()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := engine.Migrate(ctx, pool); err != nil {
		return err
	}

	reg := builtin.NewRegistry()
	greeted := make(chan string, 1)
	if err := reg.Register("greet", func(_ context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		var in struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(task.Inputs, &in); err != nil {
			return nil, wftype.Permanent(err)
		}
		greeted <- in.Name
		return json.Marshal(map[string]string{"greeting": "hello, " + in.Name})
	}); err != nil {
		return err
	}
	set, err := spec.Compile([]spec.Source{{Name: "greet.yaml", Data: []byte(specs)}}, spec.Options{Builtins: reg.Names()})
	if err != nil {
		return err
	}
	eng, err := engine.New(engine.Config{Pool: pool, Specs: set, Registry: reg, PollInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}

	// The task exists only because this transaction commits.
	var res client.Result
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		res, err = eng.Client().EnqueueTx(ctx, tx, client.Request{TaskType: "greet", Inputs: json.RawMessage(`{"name": "world"}`)})
		return err
	})
	if err != nil {
		return err
	}

	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- eng.Run(runCtx) }()
	select {
	case name := <-greeted:
		fmt.Println("greeted", name)
	case <-ctx.Done():
		stop()
		return errors.New("the task never ran")
	}
	stop()
	if err := <-stopped; err != nil {
		return err
	}
	task, err := eng.Store().GetTask(ctx, res.Task.ID)
	if err != nil {
		return err
	}
	if task.Status != wftype.StatusCompleted {
		return fmt.Errorf("task %s ended %s, want COMPLETED", task.ID, task.Status)
	}
	fmt.Println("task", task.ID, task.Status, string(task.Outputs))

	// A receiver of wf's webhooks verifies their signatures.
	secret, body := []byte("0123456789abcdef"), []byte(`{"event_type":"catalog.created"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	if err := webhooks.Verify(secret, ts, webhooks.Sign(secret, ts, body), body, time.Now(), webhooks.DefaultTolerance); err != nil {
		return fmt.Errorf("error verifying a signature: %w", err)
	}
	fmt.Println("webhook signature verified")
	return nil
}

// ownDatabase creates a database of the program's own on the server at base
// and returns its URL and a function that drops it.
func ownDatabase(ctx context.Context, base string) (string, func(), error) {
	if base == "" {
		return "", nil, errors.New("WF_TEST_DATABASE_URL is not set (run through internal/dbtest/withdb)")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "wf_embed_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	drop := func() {
		defer conn.Close(context.Background())
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}
