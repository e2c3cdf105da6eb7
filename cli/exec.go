package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/worker"
	"github.com/wfhq/wf/runners/cloudrun"
	"github.com/wfhq/wf/wftype"
)

// execCommand is `wf exec`, the generic worker (the seed's main_task.py):
// it runs one task in this process with its handler and reporters and
// writes its status, outputs and progress straight to the database. It is
// what a remote runner's container executes.
func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run one task here and write its result to the database (the generic worker)",
		ArgsUsage: "TASK_TYPE [PAYLOAD] | --task-id ID",
		Description: "With TASK_TYPE and PAYLOAD (a JSON object of inputs, - for standard input, default {}), wf exec\n" +
			"creates the task and claims it in one transaction, then runs it. With --task-id it runs an existing\n" +
			"task: a PENDING one it claims itself, without waiting for its run_after; an ACTIVE one only under the\n" +
			"claim it was handed, --owner-id ($" + cloudrun.EnvOwnerID + ") and --attempt ($" + cloudrun.EnvAttempt + "), which is how a Cloud Run\n" +
			"job runs the task its runner claimed. The task runs on its local handler (never a remote runner), with\n" +
			"the reporters of its task type; its lease is extended while it runs; its outcome is decided as wf run\n" +
			"decides it (retry with backoff, DEAD_LETTER, FAILED for a permanent error).\n\n" +
			"A task wf exec claims itself (created, or PENDING) keeps its task type's limits and the pauses as wf run's\n" +
			"claims do: when its type or tenant is paused, or concurrency.global, concurrency.per_tenant or\n" +
			"rate_limit has no room, wf exec says which and exits 1, having created and claimed nothing. --force runs\n" +
			"it anyway; its start still counts in the type's rate window.\n\n" +
			"Exit status: 0 when the task COMPLETED (or had already), 1 otherwise, 2 for a usage error.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "task-id", Usage: "run the existing task `ID` instead of creating one"},
			&cli.StringFlag{Name: "owner-id", EnvVars: []string{cloudrun.EnvOwnerID}, Usage: "with --task-id: the `OWNER` id of the claim to run the ACTIVE task under"},
			&cli.IntFlag{Name: "attempt", EnvVars: []string{cloudrun.EnvAttempt}, Usage: "with --owner-id: the claim's attempt `N` (0: any; ignored without --owner-id)"},
			&cli.StringFlag{Name: "schema-name", Usage: "with TASK_TYPE: the tenant `SCHEMA` (default system)"},
			&cli.StringFlag{Name: "dedup-key", Usage: "with TASK_TYPE: dedup `KEY` overriding the spec's expression"},
			&cli.BoolFlag{Name: "force", Usage: "claim the task even when its task type or tenant is paused or its type's limits (concurrency.global, per_tenant, rate_limit) have no room"},
			configFlag("heartbeat_interval", "lease extension interval (`DURATION`)"),
			configFlag("specs", "comma-separated spec `PATHS` (default specs)"),
			formatFlag(formatText, formatJSON),
		},
		Action: runExec,
	}
}

// execRequest is what the command line asks wf exec to do.
type execRequest struct {
	taskID *uuid.UUID        // --task-id; nil means create
	lease  store.WorkerLease // with --task-id: the claim to run under
	create client.Request    // without --task-id
}

// parseExec checks the arguments; every mistake is a usage error (exit 2).
func parseExec(c *cli.Context) (execRequest, error) {
	var req execRequest
	if c.String("task-id") != "" {
		if c.NArg() > 0 {
			return req, Usagef("exec takes either TASK_TYPE [PAYLOAD] or --task-id ID, not both (got %q)", c.Args().First())
		}
		id, err := uuid.Parse(c.String("task-id"))
		if err != nil {
			return req, Usagef("--task-id %q is not a task id (a UUID)", c.String("task-id"))
		}
		req.taskID = &id
		req.lease = store.WorkerLease{Owner: c.String("owner-id"), Attempt: c.Int("attempt")}
		if req.lease.Attempt < 0 {
			return req, Usagef("--attempt must be 1 or more (0: any), got %d", req.lease.Attempt)
		}
		if req.lease.Owner == "" {
			// WF_ATTEMPT alone (an exec child's environment) names no claim.
			req.lease.Attempt = 0
		}
		return req, nil
	}
	if c.NArg() < 1 || c.NArg() > 2 {
		return req, Usagef("exec takes TASK_TYPE [PAYLOAD] or --task-id ID (flags go before the arguments), got %d arguments", c.NArg())
	}
	payload := "{}"
	if c.NArg() == 2 {
		payload = c.Args().Get(1)
	}
	if payload == "-" {
		r := c.App.Reader
		if r == nil {
			r = os.Stdin
		}
		b, err := io.ReadAll(io.LimitReader(r, 64<<20))
		if err != nil {
			return req, Usagef("PAYLOAD: error reading standard input: %v", err)
		}
		payload = string(b)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(payload), &obj); err != nil || obj == nil {
		return req, Usagef("PAYLOAD must be a JSON object of the task's inputs, got %.60q", strings.TrimSpace(payload))
	}
	req.create = client.Request{
		TaskType: c.Args().First(), SchemaName: c.String("schema-name"), DedupKey: c.String("dedup-key"),
		Inputs: json.RawMessage(payload),
	}
	return req, nil
}

func runExec(c *cli.Context) error {
	req, err := parseExec(c)
	if err != nil {
		return err
	}
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	rt, cleanup, err := openRuntime(c, runtimeOptions{migrate: migrateLocalOnly})
	if err != nil {
		return err
	}
	defer cleanup()
	// Creating a task acts as an admin, as wf enqueue does: a type only wf
	// itself creates (its spec's api.create leaves admin out: the drops,
	// event_dispatch, webhook_delivery) is refused before anything is
	// written. --task-id runs a task that exists, whoever created it.
	if req.taskID == nil {
		if tt, ok := rt.specs.TaskType(req.create.TaskType); ok && !tt.CreatableBy(spec.RoleAdmin) {
			return cli.Exit(fmt.Sprintf("task type %s is created only by wf itself (its spec's api.create is [%s]); wf exec cannot create it, only run one that exists (--task-id)",
				tt.Name(), strings.Join(tt.CreateRoles(), ", ")), ExitFailure)
		}
	}
	ctx := c.Context
	// Local runners only: the worker runs the task, it never hands it on.
	eng, err := rt.newEngine(c, "", nil)
	if err != nil {
		return err
	}
	if err := execUnserved(ctx, eng, req); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	w, err := worker.New(worker.Config{
		Store: eng.Store(), Owner: eng.Owner(), Capabilities: eng.Capabilities(), Rules: eng.Rules(),
		Reporters: rt.reporterHook, HeartbeatInterval: rt.cfg.HeartbeatInterval, Logger: rt.log,
		// A remote worker continues the trace the task was enqueued in.
		TracerProvider: rt.tracer,
		// A task it claims itself is held by the limits and the pauses as
		// the claims of wf run are, unless forced.
		CheckPauses: true, Force: c.Bool("force"),
	})
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}

	var claim worker.Claim
	if req.taskID != nil {
		claim, err = w.Take(ctx, *req.taskID, req.lease)
	} else {
		claim, err = w.Create(ctx, eng.Client(), req.create)
	}
	if err != nil {
		return execTakeError(c, format, err)
	}
	res, err := w.Run(ctx, claim)
	if err != nil {
		return cli.Exit(fmt.Sprintf("task %s: %v", claim.Task.ID, err), ExitFailure)
	}
	if err := printExecResult(c.App.Writer, format, res.Task); err != nil {
		return err
	}
	if res.Status != wftype.StatusCompleted {
		msg := fmt.Sprintf("task %s ended %s", res.Task.ID, res.Status)
		if res.Status == wftype.StatusPending {
			msg += fmt.Sprintf(" (retry %d of %d at %s)", res.Task.RetryCount, res.Task.MaxRetries, res.Task.RunAfter.Format("2006-01-02T15:04:05Z07:00"))
		}
		if res.RunErr != nil {
			msg += ": " + res.RunErr.Error()
		}
		return cli.Exit(msg, ExitFailure)
	}
	return nil
}

// migrateLocalOnly is wf exec's migration: the local cluster is wf's own,
// so it is brought up to date; a database given by URL is migrated by its
// operator (wf migrate, wf run) and must be up to date already.
func migrateLocalOnly(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	if err := checkSchema(ctx, cfg, pool, slog.New(slog.DiscardHandler), accessSchema); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	return nil
}

// execTakeError reports why a task could not be taken: a task that had
// already COMPLETED is success (a restarted container), any other reason a
// failure; one held by a pause or a limit says so, and that --force runs it.
func execTakeError(c *cli.Context, format string, err error) error {
	var fin *worker.FinishedError
	var busy *worker.BusyError
	var paused *worker.PausedError
	switch {
	case errors.As(err, &busy):
		msg := err.Error()
		if busy.RetryAfter > 0 {
			msg += fmt.Sprintf(" (a new window opens in %s)", time.Duration(math.Ceil(busy.RetryAfter.Seconds()))*time.Second)
		}
		return cli.Exit(msg+"; nothing was changed (--force runs it anyway)", ExitFailure)
	case errors.As(err, &paused):
		return cli.Exit(err.Error()+"; nothing was changed (wf tasks resume lifts the pause; --force runs it anyway)", ExitFailure)
	case errors.As(err, &fin):
		if perr := printExecResult(c.App.Writer, format, fin.Task); perr != nil {
			return perr
		}
		if fin.Task.Status == wftype.StatusCompleted {
			return nil
		}
		return cli.Exit(fin.Error(), ExitFailure)
	}
	return enqueueError(c, err)
}

// printExecResult prints the task as it ended: one line (and its outputs)
// as text, or the task's row as JSON.
func printExecResult(w io.Writer, format string, t wftype.Task) error {
	if format == formatJSON {
		return writeJSON(w, t)
	}
	fmt.Fprintf(w, "task %s %s\n", t.ID, t.Status)
	if len(t.Outputs) > 0 {
		fmt.Fprintf(w, "outputs: %s\n", t.Outputs)
	}
	return nil
}
