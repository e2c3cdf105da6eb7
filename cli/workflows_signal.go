package cli

import (
	"encoding/json"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
)

// workflowsSignalCommand is `wf workflows signal RUN_ID NAME --payload
// JSON`: it sends signal NAME to the run's approval steps waiting for it,
// as POST /workflows/runs/{run_id}/signals/{name} does.
func workflowsSignalCommand() *cli.Command {
	return &cli.Command{
		Name:      "signal",
		Usage:     "send a signal to a run's approval steps waiting for it (its payload becomes their outputs)",
		ArgsUsage: "RUN_ID NAME",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "payload", Usage: "the signal's payload, a `JSON` value checked against the step's payload schema (default {})"},
			formatFlag(formatText, formatJSON),
		},
		Action: databaseActionArgs(accessSchema, workflowsSignal),
	}
}

// workflowsSignal is the action of `wf workflows signal`.
func workflowsSignal(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	args, payloadText, err := signalArgs(c.Args().Slice(), c.String("payload"))
	if err != nil {
		return err
	}
	if len(args) != 2 {
		return Usagef("signal takes RUN_ID and NAME, got %d arguments", len(args))
	}
	name := args[1]
	ref, err := parseRunRef(args[0])
	if err != nil {
		return err
	}
	var payload json.RawMessage
	if p := payloadText; p != "" {
		if !json.Valid([]byte(p)) {
			return Usagef("--payload is not valid JSON: %s", p)
		}
		payload = json.RawMessage(p)
	}
	wfs, st, id, err := runRuntime(c, cfg, pool, ref)
	if err != nil {
		return err
	}
	if _, err := wfs.Signal(c.Context, st.WithStepHook(wfs.Advance), id, name, payload); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	return workflowsShow(c, wfs, st, id)
}

// signalArgs takes --payload also after the arguments, as the usage
// line reads (wf workflows signal RUN_ID NAME --payload JSON), which the
// flag parser, stopping at the first argument, leaves among them.
func signalArgs(all []string, payload string) ([]string, string, error) {
	var args []string
	for i := 0; i < len(all); i++ {
		a := all[i]
		switch {
		case a == "--payload" || a == "-payload":
			if i+1 >= len(all) {
				return nil, "", Usagef("--payload needs a JSON value")
			}
			payload = all[i+1]
			i++
		case strings.HasPrefix(a, "--payload="):
			payload = strings.TrimPrefix(a, "--payload=")
		default:
			args = append(args, a)
		}
	}
	return args, payload, nil
}
