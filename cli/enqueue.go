package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/lines"
	"github.com/wfhq/wf/wftype"
)

// enqueueCommand is `wf enqueue TYPE`: create a task, or find the live task
// that holds its dedup key, and optionally follow it to its end.
func enqueueCommand() *cli.Command {
	return &cli.Command{
		Name:      "enqueue",
		Usage:     "create a task (PENDING) of a task type",
		ArgsUsage: "TYPE",
		Flags: inputFlags(
			&cli.StringFlag{Name: "schema-name", Usage: "the tenant `SCHEMA` (default system; required for CATALOG and ASSET task types)"},
			&cli.StringFlag{Name: "dedup-key", Usage: "dedup `KEY` overriding the spec's expression"},
			&cli.StringFlag{Name: "run-at", Usage: "run no earlier than `TIME` (RFC 3339, e.g. 2026-12-01T18:00:00Z)"},
			&cli.StringFlag{Name: "in", Usage: "run after `DURATION` from now (e.g. 90s, 5m, 1h30m)"},
			&cli.IntFlag{Name: "count", Value: 1, Usage: "create `N` tasks with these inputs at once (bulk: one statement, a COPY from 500 on)"},
			&cli.BoolFlag{Name: "wait", Usage: "follow the task to its end; exit 1 unless it COMPLETED"},
			formatFlag(formatText, formatJSON),
		),
		Action: runEnqueue,
	}
}

func runEnqueue(c *cli.Context) error {
	format, err := oneArgumentFormat(c, "enqueue", "TYPE")
	if err != nil {
		return err
	}
	count := c.Int("count")
	if count < 1 || count > 1_000_000 {
		return Usagef("--count must be between 1 and 1000000, got %d", count)
	}
	if c.Bool("wait") && count != 1 {
		return Usagef("--wait follows one task; drop --count")
	}
	inputs, err := enqueueInputs(c)
	if err != nil {
		return err
	}
	runAfter, err := client.ParseDelay(clock.Now(), c.String("run-at"), c.String("in"))
	if c.IsSet("run-at") && c.IsSet("in") {
		return Usagef("give --run-at or --in, not both")
	}
	if err != nil {
		if derr := (*client.DelayError)(nil); errors.As(err, &derr) && derr.Field == "run_in" {
			return Usagef("--in: %s", derr.Message)
		}
		return Usagef("--run-at: %s", strings.TrimPrefix(err.Error(), "run_at: "))
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	specs, err := loadSpecs(c, cfg)
	if err != nil {
		return err
	}
	if _, ok := specs.TaskType(c.Args().First()); !ok {
		return unknownTaskType(c.Args().First(), specs, cfg.Specs)
	}
	// The command acts as an admin: a type only wf itself creates (its spec's
	// api.create leaves admin out) is refused before anything is written.
	if tt, ok := specs.TaskType(c.Args().First()); ok && !tt.CreatableBy(spec.RoleAdmin) {
		return cli.Exit(fmt.Sprintf("task type %s is created only by wf itself (its spec's api.create is [%s]); it cannot be enqueued by hand",
			tt.Name(), strings.Join(tt.CreateRoles(), ", ")), ExitFailure)
	}
	pool, cleanup, err := openDatabase(c.Context, cfg, newLogger(cfg, c.App.ErrWriter), accessSchema)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	defer cleanup()
	files, err := filesOpener(cfg)
	if err != nil {
		return err
	}
	st := configuredStore(cfg, pool)
	cl := client.New(st, specs).WithFiles(files)
	req := client.Request{TaskType: c.Args().First(), SchemaName: c.String("schema-name"), Inputs: inputs, DedupKey: c.String("dedup-key"), RunAfter: runAfter}
	reqs := make([]client.Request, count)
	for i := range reqs {
		reqs[i] = req
	}
	results, err := cl.EnqueueMany(c.Context, reqs)
	if err != nil {
		return enqueueError(c, err)
	}
	warnUnserved(c.Context, st, c.App.ErrWriter, req.TaskType)
	// With --wait, JSON output is one document: the task as it ended.
	if !c.Bool("wait") || format != formatJSON {
		if err := printEnqueued(c.App.Writer, format, results, runAfter != nil); err != nil {
			return err
		}
	}
	if !c.Bool("wait") {
		return nil
	}
	final, err := waitForTask(c.Context, pool, results[0].Task.ID, c.App.ErrWriter)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	if format == formatJSON {
		doc := struct {
			wftype.Task
			Deduplicated bool `json:"deduplicated"`
		}{final, results[0].Duplicate}
		if err := writeJSON(c.App.Writer, doc); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.App.Writer, "task %s %s\n", final.ID, final.Status)
		if len(final.Outputs) > 0 && string(final.Outputs) != "null" && string(final.Outputs) != "{}" {
			fmt.Fprintf(c.App.Writer, "outputs: %s\n", final.Outputs)
		}
	}
	if final.Status != wftype.StatusCompleted {
		msg := fmt.Sprintf("task %s ended %s", final.ID, final.Status)
		if final.Error != nil {
			msg += ": " + *final.Error
		}
		return cli.Exit(msg, ExitFailure)
	}
	return nil
}

// inputFlags are --input and --json, which enqueueInputs reads, followed
// by a command's other flags.
func inputFlags(more ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		&cli.GenericFlag{Name: "input", Aliases: []string{"i"}, Value: &keyValues{}, Usage: "an input `KEY=VALUE` (VALUE is parsed as JSON when it is valid JSON, else taken as a string); repeatable"},
		&cli.StringFlag{Name: "json", Usage: "read the inputs object from `FILE` (- for standard input)"},
	}, more...)
}

// keyValues collects a repeatable flag's values as given. A
// cli.StringSliceFlag would split each at its commas, so --input
// 'tags=["a","b"]' arrived as two values and its JSON list was lost.
type keyValues []string

// Set adds one value. urfave/cli copies a flag's value to its other names
// (--input to -i) by Set(String()) on the same keyValues: that copy is
// recognised and ignored. String joins with NUL, which no argument holds;
// for one value the copy is that value again, which adds nothing.
func (k *keyValues) Set(v string) error {
	if len(*k) > 0 && v == k.String() {
		return nil
	}
	*k = append(*k, v)
	return nil
}

// String lists the values, NUL-separated.
func (k *keyValues) String() string { return strings.Join(*k, "\x00") }

// enqueueInputs builds the inputs object from --json and --input flags.
func enqueueInputs(c *cli.Context) (json.RawMessage, error) {
	obj := map[string]any{}
	if path := c.String("json"); path != "" {
		var r io.Reader
		if path == "-" {
			r = c.App.Reader
			if r == nil {
				r = os.Stdin
			}
		} else {
			f, err := os.Open(path)
			if err != nil {
				return nil, Usagef("--json: %v", err)
			}
			defer f.Close()
			r = f
		}
		b, err := io.ReadAll(io.LimitReader(r, 64<<20))
		if err != nil {
			return nil, Usagef("--json: error reading %s: %v", path, err)
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return nil, Usagef("--json: %s does not hold a JSON object: %v", path, err)
		}
	}
	var given []string
	if kvs, ok := c.Generic("input").(*keyValues); ok {
		given = *kvs
	}
	for _, kv := range given {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, Usagef("--input %q: expected KEY=VALUE", kv)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v
		}
		obj[k] = val
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("error encoding inputs: %w", err)
	}
	return b, nil
}

func printEnqueued(w io.Writer, format string, results []client.Result, delayed bool) error {
	if format == formatJSON {
		type row struct {
			TaskID       uuid.UUID         `json:"task_id"`
			Status       wftype.TaskStatus `json:"status"`
			Deduplicated bool              `json:"deduplicated"`
		}
		rows := make([]row, len(results))
		for i, r := range results {
			rows[i] = row{r.Task.ID, r.Task.Status, r.Duplicate}
		}
		if len(rows) == 1 {
			return writeJSON(w, rows[0])
		}
		return writeJSON(w, rows)
	}
	created, dups := 0, 0
	for _, r := range results {
		if r.Duplicate {
			dups++
			if len(results) <= 10 {
				fmt.Fprintf(w, "deduplicated: task %s (%s) already holds dedup key %q; nothing created\n", r.Task.ID, r.Task.Status, deref(r.Task.DedupKey))
			}
			continue
		}
		created++
		if len(results) <= 10 {
			fmt.Fprintf(w, "created task %s (%s, %s)", r.Task.ID, r.Task.TaskType, r.Task.Status)
			if delayed {
				fmt.Fprintf(w, ", runs at %s", r.Task.RunAfter.Format(time.RFC3339))
			}
			fmt.Fprintln(w)
		}
	}
	if len(results) > 10 {
		fmt.Fprintf(w, "created %d tasks, %d deduplicated\n", created, dups)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// waitForTask polls the task until it is terminal, drawing its progress on w.
func waitForTask(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID, w io.Writer) (wftype.Task, error) {
	st := store.New(pool)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	// On a terminal the line is redrawn in place; elsewhere each change is a line.
	term := isTerminalWriter(w)
	endLine := func() {
		if term {
			fmt.Fprintln(w)
		}
	}
	last := ""
	for {
		t, err := st.GetTask(ctx, id)
		if err != nil {
			return t, err
		}
		if line := progressLine(t); line != last {
			if term {
				fmt.Fprintf(w, "\r\033[K%s", line)
			} else {
				fmt.Fprintln(w, line)
			}
			last = line
		}
		if t.Status.Terminal() {
			endLine()
			return t, nil
		}
		select {
		case <-ctx.Done():
			endLine()
			return t, fmt.Errorf("stopped waiting for task %s (it goes on): %w", id, ctx.Err())
		case <-tick.C:
		}
	}
}

// progressLine renders a task's status and record counts as one line with a
// bar when the handler reported an expected total.
func progressLine(t wftype.Task) string {
	line := fmt.Sprintf("%s %s attempt %d", t.ID, t.Status, t.Attempts)
	if t.RetryCount > 0 {
		line += fmt.Sprintf(" (retry %d of %d)", t.RetryCount, t.MaxRetries)
	}
	var p map[string]any
	if len(t.Progress) == 0 || json.Unmarshal(t.Progress, &p) != nil {
		return line
	}
	if r, ok := p["records"].(map[string]any); ok {
		p = r
	}
	num := func(k string) (float64, bool) {
		v, ok := p[k].(float64)
		return v, ok
	}
	done, hasDone := num("total")
	if expected, ok := num("expected"); ok && expected > 0 && hasDone {
		const width = 30
		filled := min(int(done/expected*width), width)
		line += fmt.Sprintf(" [%s%s] %3.0f%%", strings.Repeat("#", filled), strings.Repeat("-", width-filled), done/expected*100)
	}
	if hasDone {
		line += " records " + strconv.FormatFloat(done, 'f', -1, 64)
		for _, k := range []string{"succeeded", "rejected", "failed"} {
			if v, ok := num(k); ok {
				line += fmt.Sprintf(" %s %v", k, v)
			}
		}
	}
	return line
}

// enqueueError is a failed enqueue as a command's exit: inputs that do not
// match the task type's schema one problem a line, any other error as it
// reads.
// quoteHints explains the refusals of --input values that were read as
// JSON (a number, true, false, null) where the schema wanted a string:
// --input message=123 gives the number 123, and the fix is to quote it.
func quoteHints(c *cli.Context, errs spec.InputErrors) []string {
	if c == nil {
		return nil
	}
	kvs, ok := c.Generic("input").(*keyValues)
	if !ok {
		return nil
	}
	var hints []string
	for _, kv := range *kvs {
		k, v, _ := strings.Cut(kv, "=")
		var val any
		if json.Unmarshal([]byte(v), &val) != nil {
			continue // taken as a string already
		}
		switch val.(type) {
		case string, map[string]any, []any:
			continue
		}
		for _, e := range errs {
			if e.Pointer == "/"+k && strings.Contains(e.Message, "string") {
				hints = append(hints, fmt.Sprintf("hint: --input %s was read as JSON (%s); to pass it as text, quote it: --input '%s=\"%s\"'", kv, v, k, v))
				break
			}
		}
	}
	return hints
}

// unknownTaskType is the failure for a task type the specs do not declare,
// with the nearest declared one when one is close, before the database is
// opened.
func unknownTaskType(name string, specs *spec.Set, paths []string) error {
	var names []string
	for _, tt := range specs.TaskTypes() {
		names = append(names, tt.Name())
	}
	msg := fmt.Sprintf("unknown task type %q in the specs (%s)", name, strings.Join(paths, ", "))
	if near := nearestName(name, names); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return cli.Exit(msg, ExitFailure)
}

func enqueueError(c *cli.Context, err error) error {
	var verr *client.ValidationError
	if errors.As(err, &verr) && len(verr.Inputs) > 0 {
		msg := fmt.Sprintf("invalid inputs for task type %s:\n%s", verr.TaskType, lines.Indented(verr.Inputs))
		for _, hint := range quoteHints(c, verr.Inputs) {
			msg += "\n" + hint
		}
		return cli.Exit(msg, ExitFailure)
	}
	return cli.Exit(err.Error(), ExitFailure)
}
