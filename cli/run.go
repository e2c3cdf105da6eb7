package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
)

// runCommand is `wf run`, the daemon: it migrates the database, loads the
// specs and claims and runs tasks until SIGINT or SIGTERM, then shuts down
// gracefully (running tasks get --grace to finish, the rest are handed back).
func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run the engine: claim and run tasks until SIGINT/SIGTERM",
		Description: "Without a database URL, wf run starts a PostgreSQL of its own in <data-dir>/pg.\n" +
			"Any number of instances may share one database; each claims only what its runners can run.",
		Flags: []cli.Flag{
			configFlag("slots", "how many tasks run at once in this instance (`N`)"),
			configFlag("grace", "how long running tasks may finish on shutdown (`DURATION`)"),
			configFlag("poll_interval", "follower poll and leader sweep interval (`DURATION`)"),
			configFlag("heartbeat_interval", "lease extension interval (`DURATION`)"),
			configFlag("janitor_interval", "janitor throttle (`DURATION`)"),
			configFlag("specs", "comma-separated spec `PATHS` (default specs)"),
			configFlag("listen", "HTTP API listen address `HOST:PORT` (default 127.0.0.1:8080; port 0 picks a free one)"),
		},
		Action: runEngine,
	}
}

// configFlag is a command flag that overrides the configuration key of the
// same name; package config parses and checks its value.
func configFlag(key, usage string) cli.Flag {
	return &cli.StringFlag{Name: configFlagName(key), Usage: usage}
}

func runEngine(c *cli.Context) error {
	if err := noArguments(c, "run"); err != nil {
		return err
	}
	rt, cleanup, err := openRuntime(c, runtimeOptions{filesFolder: true})
	if err != nil {
		return err
	}
	defer cleanup()
	ctx, hangup := context.WithCancel(c.Context)
	defer hangup()
	remote, closeRemote, err := cloudRunRunners(ctx, rt.specs, rt.store, cloudRunOptions(c), rt.log)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	defer closeRemote()
	var apiServer *apiHandle // set before any reload can come (the engine runs after)
	followReloads(c, rt, func() *apiHandle { return apiServer })
	eng, err := rt.newEngine(c, "", remote)
	if err != nil {
		return err
	}
	// The HTTP API serves alongside the engine and stops after it (SIGTERM).
	apiServer, err = startAPI(ctx, rt, eng)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	stopHUP := reloadOnSIGHUP(ctx, eng, rt.log, hangup)
	defer stopHUP()
	runErr := eng.Run(ctx)
	if err := errors.Join(runErr, apiServer.stop()); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	return nil
}

// loadSpecs compiles the configured spec paths; invalid specs exit 1 with
// every error as file:line:col.
func loadSpecs(c *cli.Context, cfg *config.Config) (*spec.Set, error) {
	set, err := spec.Load(spec.Options{Builtins: handlerNames(c)}, cfg.Specs...)
	if err != nil {
		return nil, cli.Exit(fmt.Sprintf("invalid specs:\n%s", err), ExitFailure)
	}
	return set, nil
}

// storeChannels maps the configured NOTIFY channels.
func storeChannels(cfg *config.Config) store.Channels {
	return store.Channels{
		TaskQueued:        cfg.Channels.TaskQueued,
		TaskStatusChanged: cfg.Channels.TaskStatusChanged,
		Events:            cfg.Channels.Events,
	}
}
