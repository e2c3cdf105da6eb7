package cli

import (
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
	return []*cli.Command{
		{
			Name:   "bulk-cancel",
			Usage:  "cancel every PENDING or ACTIVE task a filter matches (running ones are stopped)",
			Flags:  flags("PENDING, ACTIVE (default both)"),
			Action: databaseAction(accessSchema, tasksBulkCancel),
		},
		{
			Name:   "bulk-requeue",
			Usage:  "put every DEAD_LETTER (or FAILED, CANCELLED) task a filter matches back to PENDING",
			Flags:  flags("DEAD_LETTER (default), FAILED, CANCELLED"),
			Action: databaseAction(accessSchema, tasksBulkRequeue),
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

func tasksBulkCancel(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	live := []wftype.TaskStatus{wftype.StatusPending, wftype.StatusActive}
	m, err := bulkMatch(c, live, live)
	if err != nil {
		return err
	}
	st := store.New(pool).WithChannels(storeChannels(cfg))
	if c.Bool("dry-run") {
		return printMatched(c, st, m, "cancel")
	}
	res, err := st.CancelTasks(c.Context, m)
	if err != nil {
		return storeError(err)
	}
	fmt.Fprintf(c.App.Writer, "cancelled %d tasks%s\n", res.Cancelled, moreNote(res.More))
	return nil
}

func tasksBulkRequeue(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	m, err := bulkMatch(c, []wftype.TaskStatus{wftype.StatusDeadLetter, wftype.StatusFailed, wftype.StatusCancelled},
		[]wftype.TaskStatus{wftype.StatusDeadLetter})
	if err != nil {
		return err
	}
	st := store.New(pool).WithChannels(storeChannels(cfg))
	if c.Bool("dry-run") {
		return printMatched(c, st, m, "requeue")
	}
	res, err := st.RequeueTasks(c.Context, m)
	if err != nil {
		return storeError(err)
	}
	fmt.Fprintf(c.App.Writer, "requeued %d tasks", res.Requeued)
	if res.Skipped > 0 {
		fmt.Fprintf(c.App.Writer, "; skipped %d whose dedup key a live task holds", res.Skipped)
	}
	fmt.Fprintf(c.App.Writer, "%s\n", moreNote(res.More))
	return nil
}

// printMatched is a bulk command's dry run.
func printMatched(c *cli.Context, st *store.Store, m store.TaskMatch, verb string) error {
	n, err := st.CountTasks(c.Context, m)
	if err != nil {
		return storeError(err)
	}
	fmt.Fprintf(c.App.Writer, "%d tasks match (dry run: nothing changed; a run would %s up to %d of them)\n", n, verb, m.Limit)
	return nil
}

func moreNote(more bool) string {
	if more {
		return "; more match: run again"
	}
	return ""
}
