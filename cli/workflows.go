package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/lines"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// workflowsCommand is `wf workflows`: start, show, list, cancel and retry
// workflow runs.
func workflowsCommand() *cli.Command {
	return &cli.Command{
		Name:  "workflows",
		Usage: "start, show, list, cancel, retry or signal workflow runs",
		Subcommands: []*cli.Command{
			{
				Name:      "start",
				Usage:     "start a run of a workflow (its first steps' tasks are created at once; wf run does the rest)",
				ArgsUsage: "WORKFLOW",
				Flags: inputFlags(
					&cli.StringFlag{Name: "schema-name", Usage: "the tenant `SCHEMA` of the run and its steps (default system)"},
					&cli.BoolFlag{Name: "wait", Usage: "follow the run to its end; exit 1 unless it COMPLETED"},
					formatFlag(formatText, formatJSON),
				),
				Action: workflowsStart,
			},
			{
				Name:  "list",
				Usage: "list runs, newest first",
				Flags: listFlagsOf("run",
					&cli.StringFlag{Name: "workflow", Usage: "only runs of `WORKFLOW`"},
					&cli.StringFlag{Name: "status", Usage: "only runs in `STATUS` (RUNNING, COMPLETED, FAILED, CANCELLED)"},
					&cli.StringFlag{Name: "schema-name", Usage: "only runs of tenant `SCHEMA`"},
				),
				Action: databaseAction(accessRead, workflowsList),
			},
			{Name: "show", Usage: "show a run with every step and its tasks", ArgsUsage: "RUN_ID",
				Flags: []cli.Flag{formatFlag(formatText, formatJSON)}, Action: runAction(accessRead, workflowsShow)},
			{Name: "cancel", Usage: "cancel a RUNNING run: pending steps are cancelled, running ones stopped", ArgsUsage: "RUN_ID",
				Flags: []cli.Flag{formatFlag(formatText, formatJSON)}, Action: runAction(accessSchema, workflowsCancel)},
			{Name: "retry", Usage: "run a FAILED or CANCELLED run again from the steps that did not complete", ArgsUsage: "RUN_ID",
				Flags: []cli.Flag{formatFlag(formatText, formatJSON)}, Action: runAction(accessSchema, workflowsRetry)},
			workflowsSignalCommand(),
		},
	}
}

// runAction wraps a command taking one run id: a full id, or a unique
// prefix of one, as wf tasks show takes.
func runAction(access dbAccess, run func(c *cli.Context, wfs *workflow.Workflows, st *store.Store, id uuid.UUID) error) cli.ActionFunc {
	return databaseActionArgs(access, func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
		if c.NArg() != 1 {
			return Usagef("%s takes one RUN_ID argument, got %d arguments", c.Command.Name, c.NArg())
		}
		ref, err := parseRunRef(c.Args().First())
		if err != nil {
			return err
		}
		wfs, st, id, err := runRuntime(c, cfg, pool, ref)
		if err != nil {
			return err
		}
		return run(c, wfs, st, id)
	})
}

// runRuntime checks --format (text or json), builds the workflow runtime
// and resolves ref to its run id.
func runRuntime(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool, ref runRef) (*workflow.Workflows, *store.Store, uuid.UUID, error) {
	if _, err := checkFormat(c, formatText, formatJSON); err != nil {
		return nil, nil, uuid.Nil, err
	}
	wfs, st, err := workflowRuntime(c, cfg, pool)
	if err != nil {
		return nil, nil, uuid.Nil, err
	}
	id, err := ref.resolve(c.Context, st)
	if err != nil {
		return nil, nil, uuid.Nil, err
	}
	return wfs, st, id, nil
}

// runRef is a RUN_ID argument: a full run id, or the range of ids a
// prefix of one stands for.
type runRef struct {
	arg        string
	id, lo, hi uuid.UUID
}

// parseRunRef reads a RUN_ID argument; it looks nothing up yet.
func parseRunRef(arg string) (runRef, error) {
	r := runRef{arg: arg}
	id, err := uuid.Parse(arg)
	if err == nil {
		r.id = id
		return r, nil
	}
	var ok bool
	if r.lo, r.hi, ok = idPrefixRange(arg); !ok {
		return r, Usagef("%q is neither a run id (a UUID) nor a prefix of one (%d hex digits at least)", arg, minIDPrefix)
	}
	return r, nil
}

// resolve is the run id r stands for: its id, or the one run whose id
// starts with its prefix.
func (r runRef) resolve(ctx context.Context, st *store.Store) (uuid.UUID, error) {
	if r.id != uuid.Nil {
		return r.id, nil
	}
	return resolvePrefix(ctx, "run", st.WorkflowRunIDsBetween, r.arg, r.lo, r.hi)
}

// workflowRuntime builds the workflow runtime on the database, from the
// configured specs.
func workflowRuntime(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) (*workflow.Workflows, *store.Store, error) {
	specs, err := loadSpecs(c, cfg)
	if err != nil {
		return nil, nil, err
	}
	st := configuredStore(cfg, pool)
	files, err := filesOpener(cfg)
	if err != nil {
		return nil, nil, err
	}
	wfs, err := workflow.New(workflow.Config{Specs: specs, Client: client.New(st, specs).WithFiles(files), Emitter: events.NewEmitter(st)})
	if err != nil {
		return nil, nil, cli.Exit(err.Error(), ExitFailure)
	}
	return wfs, st, nil
}

// withStepHook returns st with the workflow runtime's step hook, so that
// cancelling a step's task by hand fails its run in the cancel's
// transaction, as in wf run and over HTTP. The specs are read when the
// hook is first called, that is only for the tasks of workflow steps: a
// command on other tasks does not need them.
func withStepHook(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool, st *store.Store) *store.Store {
	var wfs *workflow.Workflows
	return st.WithStepHook(func(ctx context.Context, tx *store.Store, steps []store.FinishedStep) error {
		if wfs == nil {
			var err error
			if wfs, _, err = workflowRuntime(c, cfg, pool); err != nil {
				return fmt.Errorf("error reading the specs of the workflow runs these tasks belong to: %w", err)
			}
		}
		return wfs.Advance(ctx, tx, steps)
	})
}

// workflowsStart is `wf workflows start WORKFLOW`.
func workflowsStart(c *cli.Context) error {
	format, err := oneArgumentFormat(c, "start", "WORKFLOW")
	if err != nil {
		return err
	}
	inputs, err := enqueueInputs(c)
	if err != nil {
		return err
	}
	return databaseActionArgs(accessSchema, func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
		wfs, st, err := workflowRuntime(c, cfg, pool)
		if err != nil {
			return err
		}
		run, err := wfs.Start(c.Context, st, workflow.StartRequest{Workflow: c.Args().First(), SchemaName: c.String("schema-name"), Inputs: inputs})
		var ie *workflow.InputError
		switch {
		case errors.As(err, &ie) && len(ie.Inputs) > 0:
			return cli.Exit(fmt.Sprintf("invalid inputs for workflow %s:\n%s", ie.Workflow, lines.Indented(ie.Inputs)), ExitFailure)
		case err != nil:
			return cli.Exit(err.Error(), ExitFailure)
		}
		if !c.Bool("wait") {
			if format == formatJSON {
				return writeJSON(c.App.Writer, workflow.RunView(run, "/workflows/runs/"+run.ID.String()))
			}
			_, err := fmt.Fprintf(c.App.Writer, "started run %s of %s (RUNNING)\n", run.ID, run.Workflow)
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "started run %s of %s; waiting for it to end\n", run.ID, run.Workflow)
		for {
			s, err := wfs.Get(c.Context, st, run.ID)
			if err != nil {
				return cli.Exit(err.Error(), ExitFailure)
			}
			if s.Run.Status != wftype.RunRunning {
				if err := writeRun(c, wfs, format, s); err != nil {
					return err
				}
				if s.Run.Status != wftype.RunCompleted {
					return cli.Exit("", ExitFailure)
				}
				return nil
			}
			select {
			case <-c.Context.Done():
				return cli.Exit("interrupted while waiting", ExitFailure)
			case <-time.After(200 * time.Millisecond):
			}
		}
	})(c)
}

// workflowsShow is `wf workflows show RUN_ID`.
func workflowsShow(c *cli.Context, wfs *workflow.Workflows, st *store.Store, id uuid.UUID) error {
	s, err := wfs.Get(c.Context, st, id)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	return writeRun(c, wfs, c.String("format"), s)
}

// workflowsCancel is `wf workflows cancel RUN_ID`.
func workflowsCancel(c *cli.Context, wfs *workflow.Workflows, st *store.Store, id uuid.UUID) error {
	if _, err := wfs.Cancel(c.Context, st, id); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	return workflowsShow(c, wfs, st, id)
}

// workflowsRetry is `wf workflows retry RUN_ID`.
func workflowsRetry(c *cli.Context, wfs *workflow.Workflows, st *store.Store, id uuid.UUID) error {
	if _, err := wfs.Retry(c.Context, st, id); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	return workflowsShow(c, wfs, st, id)
}

// workflowsList is `wf workflows list`.
func workflowsList(c *cli.Context, _ *config.Config, pool *pgxpool.Pool) error {
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	limit := c.Int("limit")
	if limit < 1 || limit > 1000 {
		return Usagef("--limit must be between 1 and 1000, got %d", limit)
	}
	f := store.WorkflowRunFilter{Workflow: c.String("workflow"), Status: wftype.RunStatus(strings.ToUpper(c.String("status"))), Limit: limit + 1}
	switch f.Status {
	case "", wftype.RunRunning, wftype.RunCompleted, wftype.RunFailed, wftype.RunCancelled:
	default:
		return Usagef("--status must be RUNNING, COMPLETED, FAILED or CANCELLED, got %q", c.String("status"))
	}
	if s := c.String("schema-name"); s != "" {
		f.Schemas = []string{s}
	}
	if cur := c.String("cursor"); cur != "" {
		id, err := uuid.Parse(cur)
		if err != nil {
			return Usagef("--cursor %q is not a run id", cur)
		}
		f.Before = &id
	}
	runs, err := store.New(pool).ListWorkflowRuns(c.Context, f)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	next := ""
	if len(runs) > limit {
		runs = runs[:limit]
		next = runs[limit-1].ID.String()
	}
	if format == formatJSON {
		out := struct {
			Runs       []wftype.WorkflowRunView `json:"runs"`
			NextCursor string                   `json:"next_cursor,omitempty"`
		}{Runs: []wftype.WorkflowRunView{}, NextCursor: next}
		for _, r := range runs {
			out.Runs = append(out.Runs, workflow.RunView(r, "/workflows/runs/"+r.ID.String()))
		}
		return writeJSON(c.App.Writer, out)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "RUN\tWORKFLOW\tSTATUS\tTENANT\tATTEMPT\tCREATED\n")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.Workflow, r.Status, r.SchemaName, r.Attempt, r.CreatedAt.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		_, err = fmt.Fprintf(c.App.Writer, "more: --cursor %s\n", next)
	}
	return err
}

// writeRun prints a run's status.
func writeRun(c *cli.Context, wfs *workflow.Workflows, format string, s workflow.Status) error {
	if format == formatJSON {
		return writeJSON(c.App.Writer, wfs.View(s, "/workflows/runs/"+s.Run.ID.String()))
	}
	return writeRunText(c.App.Writer, s)
}

// writeRunText prints a run and its steps for a person.
func writeRunText(w io.Writer, s workflow.Status) error {
	r := s.Run
	var b strings.Builder
	fmt.Fprintf(&b, "run %s of %s: %s (attempt %d, tenant %s)\n", r.ID, r.Workflow, r.Status, r.Attempt, r.SchemaName)
	fmt.Fprintf(&b, "  created %s, deadline %s", r.CreatedAt.Format(time.RFC3339), r.Deadline.Format(time.RFC3339))
	if r.FinishedAt != nil {
		fmt.Fprintf(&b, ", ended %s", r.FinishedAt.Format(time.RFC3339))
	}
	b.WriteString("\n")
	if r.Error != nil {
		fmt.Fprintf(&b, "  error: %s\n", *redact.Ptr(r.Error))
	}
	fmt.Fprintf(&b, "  inputs: %s\n", redact.JSON(r.Inputs))
	writeRunOrigin(&b, s)
	tasks := map[string]int{}
	for _, t := range s.Tasks {
		tasks[t.Step]++
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  STEP\tSTATUS\tPROGRESS\tTASKS\n")
	for _, st := range s.Steps {
		progress := "-"
		switch {
		case workflow.WaitingFor(st) != "":
			progress = workflow.WaitingFor(st)
		case st.Items != nil:
			progress = fmt.Sprintf("%d/%d items (%d started)", st.Done, *st.Items, st.Started)
		case st.Started > 0:
			progress = strconv.Itoa(st.Done) + "/1"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", st.Step, st.Status, progress, tasks[st.Step])
	}
	_ = tw.Flush() // writes to a strings.Builder cannot fail
	for _, st := range s.Steps {
		if st.Error != nil {
			fmt.Fprintf(&b, "  %s: %s\n", st.Step, *redact.Ptr(st.Error))
		}
	}
	writeChildRuns(&b, s)
	_, err := io.WriteString(w, b.String())
	return err
}
