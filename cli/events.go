package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
)

// eventsCommand is `wf events`: emit events to the outbox, list it, and
// requeue dead letters.
func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:  "events",
		Usage: "emit events, list the outbox, requeue dead-letter events",
		Subcommands: []*cli.Command{
			{
				Name:      "emit",
				Usage:     "write one event to the outbox (consumers create the tasks its subscriptions ask for)",
				ArgsUsage: "TYPE",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "scope", Value: events.ScopePlatform, Usage: "`SCOPE`: PLATFORM, CATALOG, COLLECTION or ASSET"},
					&cli.StringFlag{Name: "schema-name", Value: "system", Usage: "the tenant `SCHEMA` the event concerns"},
					&cli.StringFlag{Name: "payload", Value: "{}", Usage: "the event's payload, a JSON `OBJECT`"},
					&cli.StringFlag{Name: "dedup-key", Usage: "dedup `KEY`: no new event while one with this key is pending"},
					&cli.BoolFlag{Name: "force", Usage: "emit a type wf emits itself (catalog.*, task.*, …): subscriptions act on them as on wf's own"},
					formatFlag(formatText, formatJSON),
				},
				Action: eventsEmit,
			},
			{
				Name:  "list",
				Usage: "list outbox events, newest first (keyset pagination: pass --cursor from the previous page)",
				Flags: listFlagsOf("event",
					&cli.StringSliceFlag{Name: "status", Usage: "only events in `STATUS`: PENDING, PROCESSING or DEAD_LETTER (repeatable)"},
					&cli.StringSliceFlag{Name: "type", Usage: "only events of event `TYPE` (repeatable)"},
				),
				Action: eventsList,
			},
			{
				Name:      "requeue",
				Usage:     "put a DEAD_LETTER event back to PENDING (attempts reset)",
				ArgsUsage: "ID",
				Action:    eventsRequeue,
			},
		},
	}
}

// parseEventID reads an event id argument.
func parseEventID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || !store.IsV7(id) {
		return uuid.Nil, Usagef("%q is not an event id (a UUIDv7)", s)
	}
	return id, nil
}

func eventsEmit(c *cli.Context) error {
	format, err := oneArgumentFormat(c, "events emit", "TYPE")
	if err != nil {
		return err
	}
	ev := events.Event{
		Type: c.Args().First(), Scope: strings.ToUpper(c.String("scope")), SchemaName: c.String("schema-name"),
		Payload: json.RawMessage(c.String("payload")), DedupKey: c.String("dedup-key"),
	}
	// Check before connecting: a bad event is a usage error.
	if _, err := events.Validate(ev); err != nil {
		return Usagef("%s", strings.TrimPrefix(err.Error(), events.ErrInvalidEvent.Error()+": "))
	}
	// wf's own types drive drops, webhook fan-out and workflow runs: an
	// operator emits one only on purpose.
	if events.Owned(ev.Type) && !c.Bool("force") {
		return Usagef("%q is a type wf emits itself (%s.*); pass --force to emit it anyway (its subscriptions act on it as on wf's own)",
			ev.Type, strings.Join(events.OwnedFamilies(), ".*, "))
	}
	return databaseActionArgs(accessSchema, func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
		em := events.NewEmitter(configuredStore(cfg, pool))
		res, err := em.Emit(c.Context, ev)
		if err != nil {
			return cli.Exit(err.Error(), ExitFailure)
		}
		if format == formatJSON {
			return writeJSON(c.App.Writer, map[string]any{
				"event_id": res.Event.ID, "event_type": res.Event.EventType, "status": res.Event.Status, "deduplicated": res.Duplicate,
			})
		}
		if res.Duplicate {
			_, err = fmt.Fprintf(c.App.Writer, "deduplicated: event %s (%s) already holds dedup key %q; nothing emitted\n",
				res.Event.ID, res.Event.Status, ev.DedupKey)
		} else {
			_, err = fmt.Fprintf(c.App.Writer, "emitted event %s (%s)\n", res.Event.ID, res.Event.EventType)
		}
		return outputError(err)
	})(c)
}

func eventsList(c *cli.Context) error {
	if err := noArguments(c, "events list"); err != nil {
		return err
	}
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	lf, err := parseListFlags(c, []string{store.EventPending, store.EventProcessing, store.EventDeadLetter}, parseEventID)
	if err != nil {
		return err
	}
	f := store.EventFilter{
		EventTypes: c.StringSlice("type"), Statuses: lf.statuses, AfterTime: lf.afterTime, AfterID: lf.afterID, Limit: lf.limit,
	}
	// Flags are checked before connecting: a typo is a usage error.
	return databaseActionArgs(accessRead, func(c *cli.Context, _ *config.Config, pool *pgxpool.Pool) error {
		return printEvents(c, pool, f, format, lf.limit)
	})(c)
}

// printEvents lists one page of events as text or JSON.
func printEvents(c *cli.Context, pool *pgxpool.Pool, f store.EventFilter, format string, limit int) error {
	evs, err := store.New(pool).ListEvents(c.Context, f)
	if err != nil {
		return storeError(err)
	}
	return listPage[store.Event]{
		key: "events", rows: evs, limit: limit, id: func(e store.Event) uuid.UUID { return e.ID },
		header: "EVENT ID\tTYPE\tSCHEMA\tSTATUS\tATTEMPTS\tCREATED\tERROR",
		writeRow: func(w io.Writer, e store.Event) {
			msg := strings.Join(strings.Fields(deref(e.Error)), " ")
			if len(msg) > 80 {
				msg = msg[:77] + "..."
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.ID, e.EventType, e.SchemaName, e.Status, e.Attempts,
				e.CreatedAt.Format(time.RFC3339), msg)
		},
	}.print(c.App.Writer, format)
}

func eventsRequeue(c *cli.Context) error {
	if c.NArg() != 1 {
		return Usagef("events requeue takes one event ID argument, got %d", c.NArg())
	}
	arg := c.Args().First()
	id, lo, hi, err := idOrPrefix(arg, parseEventID, "an event id (a UUIDv7)")
	if err != nil {
		return err
	}
	return databaseActionArgs(accessSchema, func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
		st := configuredStore(cfg, pool)
		if id == uuid.Nil {
			if id, err = resolvePrefix(c.Context, "event", st.EventIDsBetween, arg, lo, hi); err != nil {
				return err
			}
		}
		e, err := st.RequeueEvent(c.Context, id)
		if err != nil {
			return storeError(err)
		}
		_, err = fmt.Fprintf(c.App.Writer, "requeued event %s (%s, %s)\n", e.ID, e.EventType, e.Status)
		return outputError(err)
	})(c)
}
