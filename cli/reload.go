package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/engine/store"
)

// reloadCommand is `wf reload`: every running `wf run` instance of the
// service, on this machine or another, reloads its specs from its own spec
// paths, and each one's outcome is printed.
func reloadCommand() *cli.Command {
	return &cli.Command{
		Name:  "reload",
		Usage: "make every running wf run instance of the service reload its specs, and print each one's outcome",
		Description: "The request goes through the database (NOTIFY on channel " + store.ReloadChannel + "), so it reaches the\n" +
			"instances on every machine. Each instance reads its own spec paths again, validates them and swaps\n" +
			"the new set in whole, or keeps its old specs and answers why. Exit 0 when every instance reloaded,\n" +
			"1 when one kept its old specs, did not answer within --timeout, or none runs. SIGHUP to one\n" +
			"wf run process reloads that one alone.",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the instances' answers"},
		},
		Action: runReload,
	}
}

func runReload(c *cli.Context) error {
	if err := noArguments(c, "reload"); err != nil {
		return err
	}
	if c.Duration("timeout") <= 0 {
		return Usagef("--timeout must be positive, got %s", c.Duration("timeout"))
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	ctx := c.Context
	pool, cleanup, err := openDatabase(ctx, cfg, newLogger(cfg, c.App.ErrWriter), accessRead)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	defer cleanup()
	cc, err := sessionConfig(ctx, cfg, pool)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return cli.Exit(fmt.Sprintf("error connecting to listen for the answers: %v", err), ExitFailure)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	st := store.New(conn)
	if err := st.Listen(ctx, store.ReloadChannel); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	instances, err := st.ServingInstances(ctx, cfg.Name)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	if len(instances) == 0 {
		return cli.Exit(fmt.Sprintf("no wf run instance of service %q is running on this database: nothing to reload "+
			"(specs are read when wf run starts)", cfg.Name), ExitFailure)
	}
	id := newRequestID()
	if err := st.RequestReload(ctx, cfg.Name, id); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	answers := collectReloadAnswers(ctx, conn, id, cfg.Name, instances, c.Duration("timeout"))
	failed := false
	for _, in := range instances {
		name := strings.TrimPrefix(in.Name, cfg.Name+":")
		a, ok := answers[in.Name]
		switch {
		case in.Legacy:
			failed = true
			fmt.Fprintf(c.App.Writer, "%s: cannot reload (a wf without wf reload, or still starting): restart it to load new specs\n", name)
		case !ok:
			failed = true
			fmt.Fprintf(c.App.Writer, "%s: no answer within %s\n", name, c.Duration("timeout"))
		case a.ok:
			types := strings.Split(a.message, ",")
			if a.message == "" {
				types = nil
			}
			fmt.Fprintf(c.App.Writer, "%s: reloaded: serves %d task types (%s)\n", name, len(types), strings.Join(types, ", "))
		default:
			failed = true
			fmt.Fprintf(c.App.Writer, "%s: kept its old specs: %s\n", name, a.message)
		}
	}
	if failed {
		return cli.Exit("", ExitFailure)
	}
	return nil
}

// reloadAnswer is one instance's answer to a reload request.
type reloadAnswer struct {
	ok      bool
	message string // ok: the task types it serves, comma-separated; else why it kept its specs
}

// collectReloadAnswers reads the answers to request id on conn until every
// instance of instances that can answer did (by the name it is listed
// under: "<service>:<owner>", maybe cut) or timeout passes.
func collectReloadAnswers(ctx context.Context, conn *pgx.Conn, id, service string, instances []store.ServingInstance, timeout time.Duration) map[string]reloadAnswer {
	out := map[string]reloadAnswer{}
	waiting := 0
	for _, in := range instances {
		if !in.Legacy {
			waiting++
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for waiting > 0 {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return out
		}
		rest, ok := strings.CutPrefix(n.Payload, "reply:"+id+":")
		if !ok {
			continue
		}
		// rest is "<owner>:<ok|error>:<message>"; an owner id has no colon.
		owner, rest, _ := strings.Cut(rest, ":")
		outcome, message, _ := strings.Cut(rest, ":")
		full := service + ":" + owner
		for _, in := range instances {
			if _, seen := out[in.Name]; !seen && !in.Legacy && strings.HasPrefix(full, in.Name) {
				out[in.Name] = reloadAnswer{ok: outcome == "ok", message: message}
				waiting--
				break
			}
		}
	}
	return out
}

// newRequestID returns a random id for one reload request.
func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
