package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// tasksCommand is `wf tasks`: list, show, requeue and cancel tasks.
func tasksCommand() *cli.Command {
	return &cli.Command{
		Name:  "tasks",
		Usage: "list, show, requeue or cancel tasks; pause and resume task types and tenants",
		Subcommands: append([]*cli.Command{
			{
				Name:  "list",
				Usage: "list tasks, newest first (keyset pagination: pass --cursor from the previous page)",
				Flags: listFlagsOf("task",
					&cli.StringSliceFlag{Name: "status", Usage: "only tasks in `STATUS` (repeatable)"},
					&cli.StringSliceFlag{Name: "type", Usage: "only tasks of task `TYPE` (repeatable)"},
					&cli.StringSliceFlag{Name: "schema-name", Usage: "only tasks of tenant `SCHEMA` (repeatable)"},
				),
				Action: databaseAction(accessRead, tasksList),
			},
			{
				Name:  "stats",
				Usage: "counts by status, task type and tenant (the dashboard's overview), oldest due task per type, the outbox",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "window", Value: time.Hour, Usage: "count COMPLETED, FAILED and CANCELLED tasks finished in the last `D` (1m..24h)"},
					&cli.StringSliceFlag{Name: "schema-name", Usage: "only tenant `SCHEMA` (repeatable)"},
					formatFlag(formatText, formatJSON),
				},
				Action: databaseAction(accessRead, tasksStats),
			},
			{Name: "show", Usage: "show one task", ArgsUsage: "ID", Flags: []cli.Flag{formatFlag(formatText, formatJSON)}, Action: taskAction(accessRead, tasksShow)},
			{Name: "requeue", Usage: "put a DEAD_LETTER, FAILED or CANCELLED task back to PENDING", ArgsUsage: "ID", Action: taskAction(accessSchema, tasksRequeue)},
			{Name: "cancel", Usage: "cancel a PENDING or ACTIVE task (its runner is stopped)", ArgsUsage: "ID", Action: taskActionWith(accessSchema, true, tasksCancel)},
		}, append(pauseCommands(), bulkCommands()...)...),
	}
}

// taskAction wraps a command taking one task ID argument: a full id, or a
// unique prefix of one (as git takes commits). Its flags may also come after
// the id (wf tasks show 01a2… --format json).
func taskAction(access dbAccess, run func(c *cli.Context, st *store.Store, id uuid.UUID) error) cli.ActionFunc {
	return taskActionWith(access, false, run)
}

// taskActionWith is taskAction; with steps, the store run gets is the one
// of withStepHook, so that a change to a workflow step's task advances its
// run in the same transaction, as it does in wf run and over HTTP.
func taskActionWith(access dbAccess, steps bool, run func(c *cli.Context, st *store.Store, id uuid.UUID) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		args, err := flagsAfterArgs(c, 1)
		if err != nil {
			return err
		}
		if len(args) != 1 {
			return Usagef("%s takes one task ID argument, got %d", c.Command.Name, len(args))
		}
		arg := args[0]
		id, perr := parseTaskID(arg)
		var lo, hi uuid.UUID
		if perr != nil {
			var ok bool
			if lo, hi, ok = idPrefixRange(arg); !ok {
				return Usagef("%q is neither a task id (a UUIDv7) nor a prefix of one (%d hex digits at least)", arg, minIDPrefix)
			}
		}
		return databaseActionArgs(access, func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
			st := configuredStore(cfg, pool)
			if id == uuid.Nil {
				if id, err = resolveTaskPrefix(c.Context, st, arg, lo, hi); err != nil {
					return err
				}
			}
			if steps {
				st = withStepHook(c, cfg, pool, st)
			}
			return run(c, st, id)
		})(c)
	}
}

// minIDPrefix is the shortest id prefix taken, as git's.
const minIDPrefix = 4

// idPrefixRange returns the ids a prefix of an id's canonical form
// (01a2286d-1b5e-…, dashes where the full id has them, or none at all)
// spans: the prefix padded with 0s, and with fs. A trailing "…" (or
// "...") is dropped, so a short id copied from the dashboard is taken as
// it shows. ok is false for anything else, or a prefix shorter than
// minIDPrefix hex digits.
func idPrefixRange(prefix string) (lo, hi uuid.UUID, ok bool) {
	prefix = strings.TrimSuffix(strings.TrimSuffix(prefix, "…"), "...")
	hex := strings.ReplaceAll(strings.ToLower(prefix), "-", "")
	if len(hex) < minIDPrefix || len(hex) >= 32 || strings.Trim(hex, "0123456789abcdef") != "" {
		return lo, hi, false
	}
	if strings.Contains(prefix, "-") {
		for i, r := range prefix { // dashes only where the canonical form has them
			if (r == '-') != (i == 8 || i == 13 || i == 18 || i == 23) {
				return lo, hi, false
			}
		}
	}
	pad := func(digit string) uuid.UUID {
		id, err := uuid.Parse(hex + strings.Repeat(digit, 32-len(hex)))
		if err != nil { // cannot happen: 32 hex digits
			panic(err)
		}
		return id
	}
	return pad("0"), pad("f"), true
}

// resolveTaskPrefix returns the one task whose id starts with prefix; none,
// or more than one, is an error that says so (with the candidates).
func resolveTaskPrefix(ctx context.Context, st *store.Store, prefix string, lo, hi uuid.UUID) (uuid.UUID, error) {
	return resolvePrefix(ctx, "task", st.TaskIDsBetween, prefix, lo, hi)
}

// resolvePrefix returns the one id (of a task or a run: what) in [lo, hi]
// that between finds, or an error naming none or the first few.
func resolvePrefix(ctx context.Context, what string, between func(ctx context.Context, lo, hi uuid.UUID, limit int) ([]uuid.UUID, error), prefix string, lo, hi uuid.UUID) (uuid.UUID, error) {
	const shown = 5
	ids, err := between(ctx, lo, hi, shown+1)
	if err != nil {
		return uuid.Nil, storeError(err)
	}
	switch {
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) == 0:
		return uuid.Nil, cli.Exit(fmt.Sprintf("no %s id starts with %q", what, prefix), ExitFailure)
	}
	names := make([]string, 0, shown)
	for _, id := range ids[:min(len(ids), shown)] {
		names = append(names, id.String())
	}
	more := ""
	if len(ids) > shown {
		more = ", …"
	}
	return uuid.Nil, cli.Exit(fmt.Sprintf("%s id prefix %q is ambiguous: it starts %s%s; give more of the id", what, prefix, strings.Join(names, ", "), more), ExitFailure)
}

// parseTaskID reads a full task id.
func parseTaskID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || !store.IsV7(id) {
		return uuid.Nil, Usagef("%q is not a task id (a UUIDv7)", s)
	}
	return id, nil
}

// storeError turns a store error (not found, a conflict, or any other)
// into a one-line CLI failure.
func storeError(err error) error { return cli.Exit(err.Error(), ExitFailure) }

func tasksList(c *cli.Context, _ *config.Config, pool *pgxpool.Pool) error {
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	lf, err := parseListFlags(c, []wftype.TaskStatus{
		wftype.StatusPending, wftype.StatusActive, wftype.StatusCompleted, wftype.StatusFailed, wftype.StatusDeadLetter, wftype.StatusCancelled,
	}, parseTaskID)
	if err != nil {
		return err
	}
	tasks, err := store.New(pool).ListTasks(c.Context, store.TaskFilter{
		TaskTypes: c.StringSlice("type"), SchemaNames: c.StringSlice("schema-name"), Statuses: lf.statuses,
		AfterTime: lf.afterTime, AfterID: lf.afterID, Limit: lf.limit,
	})
	if err != nil {
		return storeError(err)
	}
	for i := range tasks {
		tasks[i] = redact.Task(tasks[i]) // credentials in URLs are not shown
	}
	return listPage[wftype.Task]{
		key: "tasks", rows: tasks, limit: lf.limit, id: func(t wftype.Task) uuid.UUID { return t.ID },
		header: "TASK ID\tTYPE\tSCHEMA\tSTATUS\tATTEMPTS\tCREATED",
		writeRow: func(w io.Writer, t wftype.Task) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", t.ID, t.TaskType, t.SchemaName, t.Status, t.Attempts, t.Timestamp.Format(time.RFC3339))
		},
	}.print(c.App.Writer, format)
}

func tasksShow(c *cli.Context, st *store.Store, id uuid.UUID) error {
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	t, err := st.GetTask(c.Context, id)
	if err != nil {
		return storeError(err)
	}
	attempts, err := st.GetAttempts(c.Context, id)
	if err != nil {
		return storeError(err)
	}
	// Credentials in URLs are not shown (internal/redact).
	t, attempts = redact.Task(t), redact.Attempts(attempts)
	if format == formatJSON {
		return writeJSON(c.App.Writer, struct {
			wftype.Task
			AttemptHistory []wftype.Attempt `json:"attempt_history"`
		}{t, attempts})
	}
	if err := writeTaskText(c.App.Writer, t); err != nil {
		return err
	}
	return writeAttemptsText(c.App.Writer, attempts)
}

// writeAttemptsText prints a task's attempt history as a table.
func writeAttemptsText(w io.Writer, attempts []wftype.Attempt) error {
	if len(attempts) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nattempts (the last 20):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSTARTED\tENDED\tINSTANCE\tOUTCOME\tERROR")
	for _, a := range attempts {
		started := "-"
		if a.StartedAt != nil {
			started = a.StartedAt.UTC().Format(time.RFC3339)
		}
		outcome := string(a.Outcome)
		if a.Outcome == wftype.StatusPending {
			outcome = "RETRIED"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", a.Attempt, started, a.FinishedAt.UTC().Format(time.RFC3339),
			deref(a.OwnerID), outcome, strings.ReplaceAll(deref(a.Error), "\n", " "))
	}
	return tw.Flush()
}

func writeTaskText(w io.Writer, t wftype.Task) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	tm := func(p *time.Time) string {
		if p == nil {
			return "-"
		}
		return p.Format(time.RFC3339Nano)
	}
	row("task_id", t.ID.String())
	row("task_type", t.TaskType)
	row("status", string(t.Status))
	row("schema_name", t.SchemaName)
	row("scope", string(t.Scope))
	row("execution_mode", string(t.ExecutionMode))
	row("priority", fmt.Sprint(t.Priority))
	row("attempts", fmt.Sprint(t.Attempts))
	row("retries", fmt.Sprintf("%d of %d", t.RetryCount, t.MaxRetries))
	if t.Snoozes > 0 {
		row("snoozes", fmt.Sprint(t.Snoozes))
	}
	row("dedup_key", deref(t.DedupKey))
	row("owner_id", deref(t.OwnerID))
	row("created", t.Timestamp.Format(time.RFC3339Nano))
	row("run_after", t.RunAfter.Format(time.RFC3339Nano))
	row("started", tm(t.StartedAt))
	row("finished", tm(t.FinishedAt))
	row("locked_until", tm(t.LockedUntil))
	row("inputs", string(t.Inputs))
	if len(t.Progress) > 0 {
		row("progress", string(t.Progress))
	}
	if len(t.Outputs) > 0 {
		row("outputs", string(t.Outputs))
	}
	if t.Error != nil {
		row("error", *t.Error)
	}
	return tw.Flush()
}

func tasksRequeue(c *cli.Context, st *store.Store, id uuid.UUID) error {
	t, err := st.RequeueTask(c.Context, id)
	if err != nil {
		return storeError(err)
	}
	fmt.Fprintf(c.App.Writer, "requeued task %s (%s)\n", t.ID, t.Status)
	return nil
}

func tasksCancel(c *cli.Context, st *store.Store, id uuid.UUID) error {
	t, err := st.CancelTask(c.Context, id)
	if err != nil {
		return storeError(err)
	}
	fmt.Fprintf(c.App.Writer, "cancelled task %s\n", t.ID)
	return nil
}

// tasksStats is `wf tasks stats`: the overview's counts as a table (one row
// per task type and tenant, one column per status), the oldest due task per
// type and tenant, and the outbox; --format json prints the whole overview.
// Like the dashboard, it counts every live and dead-letter task but only the
// finished ones of the window, so it is fast on any history.
func tasksStats(c *cli.Context, _ *config.Config, pool *pgxpool.Pool) error {
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	window := c.Duration("window")
	if window < time.Minute || window > 24*time.Hour {
		return Usagef("--window must be from 1m to 24h; got %s", window)
	}
	o, err := store.New(pool).ReadOverview(c.Context, store.OverviewParams{SchemaNames: c.StringSlice("schema-name"), Window: window})
	if err != nil {
		return storeError(err)
	}
	if format == formatJSON {
		return writeJSON(c.App.Writer, o)
	}
	statuses := []wftype.TaskStatus{wftype.StatusPending, wftype.StatusActive, wftype.StatusCompleted,
		wftype.StatusFailed, wftype.StatusDeadLetter, wftype.StatusCancelled}
	type key struct{ taskType, schema string }
	rows := map[key]map[wftype.TaskStatus]int64{}
	var keys []key
	for _, cnt := range o.Counts {
		k := key{cnt.TaskType, cnt.SchemaName}
		if rows[k] == nil {
			rows[k] = map[wftype.TaskStatus]int64{}
			keys = append(keys, k)
		}
		rows[k][cnt.Status] += cnt.Count
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.taskType, b.taskType), cmp.Compare(a.schema, b.schema))
	})
	w := c.App.Writer
	fmt.Fprintf(w, "tasks at %s (COMPLETED, FAILED, CANCELLED: finished since %s; PENDING: as of %s, %s ago)\n",
		o.Now.Format(time.RFC3339), o.Since.Format(time.RFC3339), o.PendingAsOf.Format(time.RFC3339),
		max(o.Now.Sub(o.PendingAsOf), 0).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "TYPE\tSCHEMA\t")
	for _, st := range statuses {
		fmt.Fprintf(tw, "%s\t", st)
	}
	fmt.Fprintln(tw)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t", k.taskType, k.schema)
		for _, st := range statuses {
			fmt.Fprintf(tw, "%d\t", rows[k][st])
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(o.OldestPending) > 0 {
		fmt.Fprintln(w, "\noldest due PENDING task:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TYPE\tSCHEMA\tDUE\tWAITING")
		for _, a := range o.OldestPending {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", a.TaskType, a.SchemaName, a.Due, o.Now.Sub(a.OldestDueAt).Round(time.Second))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range o.Paused {
		fmt.Fprintf(w, "\npaused %s %s since %s", p.Kind, p.Name, p.PausedAt.Format(time.RFC3339))
		if p.Reason != nil {
			fmt.Fprintf(w, ": %s", *p.Reason)
		}
	}
	if len(o.Paused) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\noutbox: %d pending, %d processing, %d dead letter", o.Outbox.Pending, o.Outbox.Processing, o.Outbox.DeadLetter)
	if o.Outbox.OldestPending != nil {
		fmt.Fprintf(w, "; oldest pending %s old", o.Now.Sub(*o.Outbox.OldestPending).Round(time.Second))
	}
	fmt.Fprintln(w)
	return nil
}

// idOrPrefix reads an id argument: a whole id (parse accepts it), or else a
// prefix of one, whose range [lo, hi] the caller resolves in the database
// (id is then uuid.Nil). what names the id in the usage error ("an event
// id (a UUIDv7)").
func idOrPrefix(arg string, parse func(string) (uuid.UUID, error), what string) (id, lo, hi uuid.UUID, err error) {
	if id, err = parse(arg); err == nil {
		return id, lo, hi, nil
	}
	var ok bool
	if lo, hi, ok = idPrefixRange(arg); !ok {
		return uuid.Nil, lo, hi, Usagef("%q is neither %s nor a prefix of one (%d hex digits at least)", arg, what, minIDPrefix)
	}
	return uuid.Nil, lo, hi, nil
}
