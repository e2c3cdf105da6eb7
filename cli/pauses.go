package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
)

// pauseCommands are `wf tasks pause|resume|paused`: stop and restart the
// claims of a task type or a tenant, cluster-wide.
func pauseCommands() []*cli.Command {
	target := []cli.Flag{
		&cli.StringFlag{Name: "type", Usage: "the task `TYPE`"},
		&cli.StringFlag{Name: "tenant", Usage: "the tenant's `SCHEMA` name (a catalog's schema_name, or system)"},
	}
	return []*cli.Command{
		{
			Name: "pause",
			Usage: "stop every instance from claiming the PENDING tasks of a task type or tenant (from its next claim on; " +
				"running tasks run on, new ones are accepted and wait)",
			Flags:  append(target, &cli.StringFlag{Name: "reason", Usage: "why, shown next to the pause (`TEXT`)"}),
			Action: databaseAction(accessSchema, tasksPause),
		},
		{
			Name:   "resume",
			Usage:  "lift a pause; the dispatchers are woken",
			Flags:  target,
			Action: databaseAction(accessSchema, tasksResume),
		},
		{
			Name:   "paused",
			Usage:  "list the paused task types and tenants",
			Flags:  []cli.Flag{formatFlag(formatText, formatJSON)},
			Action: databaseAction(accessRead, tasksPaused),
		},
	}
}

// pauseTarget reads --type or --tenant: exactly one.
func pauseTarget(c *cli.Context) (store.PauseKind, string, error) {
	typ, tenant := c.String("type"), c.String("tenant")
	switch {
	case (typ == "") == (tenant == ""):
		return "", "", Usagef("give exactly one of --type TYPE and --tenant SCHEMA")
	case typ != "":
		return store.PauseTaskType, typ, nil
	}
	return store.PauseTenant, tenant, nil
}

func tasksPause(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	kind, name, err := pauseTarget(c)
	if err != nil {
		return err
	}
	if kind == store.PauseTaskType {
		specs, err := loadSpecs(c, cfg)
		if err != nil {
			return err
		}
		if _, ok := specs.TaskType(name); !ok {
			return cli.Exit(fmt.Sprintf("no task type %q in the specs (%v)", name, cfg.Specs), ExitFailure)
		}
	}
	// A tenant is checked against the registry, in the catalog's database.
	st, closeCatalog, err := withCatalog(c.Context, cfg, configuredStore(cfg, pool))
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	defer closeCatalog()
	p, created, err := st.PauseQueue(c.Context, store.PauseParams{Kind: kind, Name: name, Reason: c.String("reason"), By: "cli"})
	if err != nil {
		return storeError(err)
	}
	if !created {
		fmt.Fprintf(c.App.Writer, "%s %s was already paused (since %s)\n", kind, name, p.PausedAt.Format("2006-01-02 15:04:05Z07:00"))
		return nil
	}
	fmt.Fprintf(c.App.Writer, "paused %s %s\n", kind, name)
	return nil
}

func tasksResume(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	kind, name, err := pauseTarget(c)
	if err != nil {
		return err
	}
	st := configuredStore(cfg, pool)
	if _, err := st.ResumeQueue(c.Context, kind, name); err != nil {
		return storeError(err)
	}
	fmt.Fprintf(c.App.Writer, "resumed %s %s\n", kind, name)
	return nil
}

func tasksPaused(c *cli.Context, _ *config.Config, pool *pgxpool.Pool) error {
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	pauses, err := store.New(pool).ListPauses(c.Context)
	if err != nil {
		return storeError(err)
	}
	if format == formatJSON {
		return writeJSON(c.App.Writer, pauses)
	}
	if len(pauses) == 0 {
		fmt.Fprintln(c.App.Writer, "nothing is paused")
		return nil
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tSINCE\tBY\tREASON")
	for _, p := range pauses {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Kind, p.Name, p.PausedAt.Format("2006-01-02 15:04:05Z07:00"), deref(p.PausedBy), deref(p.Reason))
	}
	return tw.Flush()
}
