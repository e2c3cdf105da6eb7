package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/schemas"
)

// schemaKinds maps what wf schema accepts as KIND to a schema file, in the
// order --list prints them. The spec kinds come first, then what they share,
// then the other documents wf reads.
var schemaKinds = []struct{ kind, file, what string }{
	{"spec", schemas.SpecSchema, "any spec document (dispatches on kind); the one editors use"},
	{spec.KindTaskType, schemas.TaskTypeSchema, "a TaskType document"},
	{spec.KindSubscription, schemas.SubscriptionSchema, "a Subscription document"},
	{spec.KindSchedule, schemas.ScheduleSchema, "a Schedule document"},
	{spec.KindRunner, schemas.RunnerSchema, "a Runner document"},
	{spec.KindWorkflow, schemas.WorkflowSchema, "a Workflow document"},
	{"defs", schemas.SpecDefsSchema, "definitions the spec schemas share"},
	{"config", config.SchemaFile, "the wf.yaml configuration file"},
	{"envelope", schemas.EnvelopeSchema, "one per-record envelope of a report"},
}

// schemaCommand is wf schema: print the JSON Schemas editors and wf check
// documents against.
func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:      "schema",
		Usage:     "print the JSON Schema of a spec kind (default: any spec document), or write them all",
		ArgsUsage: "[KIND]",
		Description: "KIND is one of spec (default), TaskType, Subscription, Schedule, Runner, Workflow, defs, config or\n" +
			"envelope (any case; a file name such as task_type.schema.json works too). Each schema has an\n" +
			"$id and refers to its siblings by relative $ref, so an editor needs them side by side:\n" +
			"--out DIR writes every spec schema (and the configuration's) into DIR.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "list", Usage: "list the kinds, their files and $id"},
			&cli.StringFlag{Name: "out", Usage: "write the schema files into `DIR` instead of printing one"},
		},
		Action: runSchema,
	}
}

// runSchema is the action of wf schema.
func runSchema(c *cli.Context) error {
	if c.NArg() > 1 {
		return Usagef("schema takes at most one KIND, got %d arguments", c.NArg())
	}
	w := c.App.Writer
	switch {
	case c.Bool("list"):
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tFILE\t$id\tDESCRIBES")
		for _, k := range schemaKinds {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.kind, k.file, schemas.ID(k.file), k.what)
		}
		return tw.Flush()
	case c.String("out") != "":
		if c.NArg() > 0 {
			return Usagef("--out writes every schema; give no KIND")
		}
		return writeSchemaFiles(c, c.String("out"))
	}
	file, err := schemaFile(c.Args().First())
	if err != nil {
		return err
	}
	data, err := schemas.Read(file)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	_, err = w.Write(data)
	return err
}

// schemaFile resolves a KIND argument ("" for the spec schema).
func schemaFile(kind string) (string, error) {
	if kind == "" {
		return schemas.SpecSchema, nil
	}
	norm := func(s string) string {
		s = strings.TrimSuffix(strings.ToLower(s), ".schema.json")
		return strings.ReplaceAll(s, "_", "")
	}
	var names []string
	for _, k := range schemaKinds {
		if norm(kind) == norm(k.kind) || norm(kind) == norm(k.file) {
			return k.file, nil
		}
		names = append(names, k.kind)
	}
	return "", Usagef("unknown schema kind %q; expected one of %s", kind, strings.Join(names, ", "))
}

// writeSchemaFiles writes every schema of schemaKinds into dir.
func writeSchemaFiles(c *cli.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Exit(fmt.Sprintf("error creating %s: %v", dir, err), ExitFailure)
	}
	files := make([]string, 0, len(schemaKinds))
	for _, k := range schemaKinds {
		files = append(files, k.file)
	}
	slices.Sort(files)
	for _, f := range files {
		data, err := schemas.Read(f)
		if err != nil {
			return cli.Exit(err.Error(), ExitFailure)
		}
		path := filepath.Join(dir, f)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return cli.Exit(fmt.Sprintf("error writing schema: %v", err), ExitFailure)
		}
		fmt.Fprintln(c.App.Writer, path)
	}
	return nil
}
