// Command wfrecord is wf with one more builtin handler, "record", which
// writes every execution (task id, process id, attempt) to the table
// wf_test.executions. The multi-process tests run it as `wf run` to count how
// often each task really ran; it also shows how a program embeds wf with Go
// handlers of its own.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/cli"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	reg := builtin.NewRegistry()
	var pool *pgxpool.Pool
	err := reg.Register("record", func(ctx context.Context, t *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		if pool == nil {
			return nil, fmt.Errorf("WF_DATABASE_URL is not set")
		}
		// A little work, so a killed process dies with tasks in flight.
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		_, err := pool.Exec(ctx, `INSERT INTO wf_test.executions (task_id, pid, attempt) VALUES ($1, $2, $3)`,
			t.ID, os.Getpid(), t.Attempts)
		return nil, err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The recording pool goes straight to the database when the test says
	// where (wf's own pool may be behind PgBouncer).
	url := os.Getenv("WF_RECORD_DATABASE_URL")
	if url == "" {
		url = os.Getenv("WF_DATABASE_URL")
	}
	if url != "" {
		if pool, err = pgxpool.New(ctx, url); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := cli.MainWith(ctx, os.Args, os.Stdout, os.Stderr, cli.Options{Registry: reg})
	stop()
	os.Exit(code)
}
