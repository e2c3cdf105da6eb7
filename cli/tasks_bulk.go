package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// bulkCommands are `wf tasks bulk-cancel|bulk-requeue`: change every task a
// filter matches, up to --limit per call, or count them (--dry-run).
func bulkCommands() []*cli.Command {
	flags := func(statuses string) []cli.Flag {
		return []cli.Flag{
			&cli.StringSliceFlag{Name: "status", Usage: "only tasks in `STATUS` (repeatable): " + statuses},
			&cli.StringSliceFlag{Name: "type", Usage: "only tasks of task `TYPE` (repeatable)"},
			&cli.StringSliceFlag{Name: "schema-name", Usage: "only tasks of tenant `SCHEMA` (repeatable)"},
			&cli.TimestampFlag{Name: "created-after", Layout: time.RFC3339, Usage: "only tasks created at or after `TIME` (RFC 3339)"},
			&cli.TimestampFlag{Name: "created-before", Layout: time.RFC3339, Usage: "only tasks created before `TIME` (RFC 3339)"},
			&cli.IntFlag{Name: "limit", Value: 1000, Usage: "change at most `N` tasks (1..10000), oldest first; run again while more match"},
			&cli.BoolFlag{Name: "dry-run", Usage: "change nothing; print how many tasks match"},
			&cli.BoolFlag{Name: "all", Usage: "needed when no --type, --schema-name or creation time narrows the match"},
		}
	}
	live := []wftype.TaskStatus{wftype.StatusPending, wftype.StatusActive}
	return []*cli.Command{
		{
			Name:   "bulk-cancel",
			Usage:  "cancel every PENDING or ACTIVE task a filter matches (running ones are stopped)",
			Flags:  flags("PENDING, ACTIVE (default both)"),
			Action: bulkAction("cancel", live, live, bulkCancel),
		},
		{
			Name:  "bulk-requeue",
			Usage: "put every DEAD_LETTER (or FAILED, CANCELLED) task a filter matches back to PENDING",
			Flags: flags("DEAD_LETTER (default), FAILED, CANCELLED"),
			Action: bulkAction("requeue", []wftype.TaskStatus{wftype.StatusDeadLetter, wftype.StatusFailed, wftype.StatusCancelled},
				[]wftype.TaskStatus{wftype.StatusDeadLetter}, bulkRequeue),
		},
	}
}

// bulkMatch reads the filter flags: statuses among allowed (default
// defaults), a filter or --all, a limit of 1 to 10000.
func bulkMatch(c *cli.Context, allowed, defaults []wftype.TaskStatus) (store.TaskMatch, error) {
	m := store.TaskMatch{TaskTypes: c.StringSlice("type"), SchemaNames: c.StringSlice("schema-name"), Limit: c.Int("limit"),
		CreatedFrom: c.Timestamp("created-after"), CreatedTo: c.Timestamp("created-before")}
	for _, st := range c.StringSlice("status") {
		if !slices.Contains(allowed, wftype.TaskStatus(st)) {
			return m, Usagef("--status %s: want one of %v", st, allowed)
		}
		m.Statuses = append(m.Statuses, wftype.TaskStatus(st))
	}
	if len(m.Statuses) == 0 {
		m.Statuses = defaults
	}
	if len(m.SchemaNames) == 0 {
		m.SchemaNames = nil
	}
	switch {
	case m.Limit < 1 || m.Limit > 10000:
		return m, Usagef("--limit must be from 1 to 10000; got %d", m.Limit)
	case m.CreatedFrom != nil && m.CreatedTo != nil && !m.CreatedFrom.Before(*m.CreatedTo):
		return m, Usagef("--created-before must be after --created-after")
	case !c.Bool("all") && len(m.TaskTypes) == 0 && m.SchemaNames == nil && m.CreatedFrom == nil && m.CreatedTo == nil:
		return m, Usagef("give --type, --schema-name, --created-after or --created-before, or --all to match every task")
	}
	return m, nil
}

// bulkAction is a bulk command's action: it reads the match (bulkMatch
// with allowed and defaults), counts it on --dry-run, else changes the
// tasks with change and prints the line change returns.
func bulkAction(verb string, allowed, defaults []wftype.TaskStatus,
	change func(ctx context.Context, st *store.Store, m store.TaskMatch) (string, error)) cli.ActionFunc {
	return databaseAction(accessSchema, func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
		m, err := bulkMatch(c, allowed, defaults)
		if err != nil {
			return err
		}
		st := configuredStore(cfg, pool)
		if c.Bool("dry-run") {
			n, err := st.CountTasks(c.Context, m)
			if err != nil {
				return storeError(err)
			}
			fmt.Fprintf(c.App.Writer, "%d tasks match (dry run: nothing changed; a run would %s up to %d of them)\n", n, verb, m.Limit)
			return nil
		}
		// With the step hook, a cancelled step task fails its run in the
		// cancel's transaction (requeues do not call it).
		done, err := change(c.Context, withStepHook(c, cfg, pool, st), m)
		if err != nil {
			return storeError(err)
		}
		fmt.Fprintln(c.App.Writer, done)
		return nil
	})
}

func bulkCancel(ctx context.Context, st *store.Store, m store.TaskMatch) (string, error) {
	res, err := st.CancelTasks(ctx, m)
	return fmt.Sprintf("cancelled %d tasks%s", res.Cancelled, moreNote(res.More)), err
}

func bulkRequeue(ctx context.Context, st *store.Store, m store.TaskMatch) (string, error) {
	res, err := st.RequeueTasks(ctx, m)
	done := fmt.Sprintf("requeued %d tasks", res.Requeued)
	if res.Skipped > 0 {
		done += fmt.Sprintf("; skipped %d whose dedup key a live task holds", res.Skipped)
	}
	return done + moreNote(res.More), err
}

func moreNote(more bool) string {
	if more {
		return "; more match: run again"
	}
	return ""
}
