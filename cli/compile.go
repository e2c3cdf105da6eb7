package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/engine/spec"
)

// compileCommand is wf compile: print the compiled spec set.
func compileCommand() *cli.Command {
	return &cli.Command{
		Name:      "compile",
		Usage:     "compile spec files and print what the engine would run from",
		ArgsUsage: "[PATH...]",
		Description: "Compiles the specs under each PATH (default " + defaultSpecPath + "/) and prints the result: task types\n" +
			"with their dispatch rules, the capability map (which runners serve each execution\n" +
			"mode and task type, in order), subscriptions, schedules, runners and each workflow's\n" +
			"graph. --format json prints it as stable JSON; --format dot prints the workflows'\n" +
			"graphs in Graphviz DOT (wf compile --format dot | dot -Tsvg > workflows.svg).\n" +
			"Invalid specs print their errors and exit 1.",
		Flags:  []cli.Flag{formatFlag(formatText, formatJSON, formatDOT)},
		Action: runCompile,
	}
}

// runCompile is the action of wf compile.
func runCompile(c *cli.Context) error {
	format, paths, err := specCommandArgs(c, formatText, formatJSON, formatDOT)
	if err != nil {
		return err
	}
	set, errs, _, err := compileSpecs(spec.Options{Builtins: handlerNames(c)}, paths)
	if err != nil {
		return err
	}
	if errs != nil {
		if err := writeSpecErrors(c.App.ErrWriter, formatText, errs, 0, nil); err != nil {
			return outputError(err)
		}
		return invalidSpecs(errs)
	}
	switch format {
	case formatJSON:
		err = writeJSON(c.App.Writer, set)
	case formatDOT:
		err = writeWorkflowsDOT(c.App.Writer, set)
	default:
		err = writeSetText(c.App.Writer, set)
	}
	return outputError(err)
}

// writeSetText prints a compiled set for a person to read.
func writeSetText(w io.Writer, set *spec.Set) error {
	var b strings.Builder
	fmt.Fprintf(&b, "spec set: %s, from %s\n", setSummary(set), plural(len(set.Files()), "file"))
	for _, f := range set.Files() {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	writeTaskTypesText(&b, set)
	writeCapabilitiesText(&b, set)
	writeSubscriptionsText(&b, set)
	writeSchedulesText(&b, set)
	writeRunnersText(&b, set)
	writeWorkflowsText(&b, set)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTaskTypesText prints the task types and their dispatch rules.
func writeTaskTypesText(b *strings.Builder, set *spec.Set) {
	writeSpecsText(b, "task types", "", set.TaskTypes(), func(t *spec.TaskType) {
		if t.Description() != "" {
			fmt.Fprintf(b, "    %s\n", t.Description())
		}
		fmt.Fprintf(b, "    scope %s, %s, handler %s\n", t.Scope(), t.Mode(), handlerText(t.Handler()))
		fmt.Fprintf(b, "    priority %d, timeout %s, visibility timeout %s, concurrency %s\n",
			t.Priority(), spec.FormatDuration(t.Timeout()), leaseText(t.VisibilityTimeout()), concurrencyText(t.Concurrency()))
		bo := t.Backoff()
		fmt.Fprintf(b, "    retries %d, backoff %s x %s up to %s, jitter %s\n", t.MaxRetries(),
			spec.FormatDuration(bo.Base), strconv.FormatFloat(bo.Factor, 'f', -1, 64), spec.FormatDuration(bo.Max), strconv.FormatFloat(bo.Jitter, 'f', -1, 64))
		dedup := t.DedupKeyExpr()
		if dedup == "" {
			dedup = "none"
		}
		b.WriteString(rateText(t.RateLimit()))
		fmt.Fprintf(b, "    dedup key: %s\n", dedup)
		creators := strings.Join(t.CreateRoles(), ", ")
		if creators == "" {
			creators = "wf only"
		}
		fmt.Fprintf(b, "    created over the API by: %s\n", creators)
		fmt.Fprintf(b, "    reporters: %s\n", reportersText(t.Reporters()))
		fmt.Fprintf(b, "    inputs: %s\n", t.InputSchema())
	})
}

// writeCapabilitiesText prints the capability map as a table.
func writeCapabilitiesText(b *strings.Builder, set *spec.Set) {
	fmt.Fprintf(b, "\ncapability map:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, c := range set.Capabilities() {
		chain := make([]string, len(c.Runners))
		for i, r := range c.Runners {
			detail := strconv.Itoa(r.Priority)
			if r.Job != "" {
				detail += ", job " + r.Job
			}
			if r.Handler != "" {
				detail += ", " + string(r.Handler)
			}
			chain[i] = fmt.Sprintf("%s (%s)", r.Name, detail)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Mode, c.TaskType, strings.Join(chain, " -> "))
	}
	_ = tw.Flush() // writes to a strings.Builder cannot fail
}

// writeSubscriptionsText prints the subscription table.
func writeSubscriptionsText(b *strings.Builder, set *spec.Set) {
	writeSpecsText(b, "subscriptions", "none", set.Subscriptions(), func(s *spec.Subscription) {
		match := "event type " + s.EventType()
		if s.IsGlob() {
			match = "event types matching " + s.EventType()
		}
		if s.WhenExpr() != "" {
			match += " when " + s.WhenExpr()
		}
		fmt.Fprintf(b, "    on %s\n", match)
		if p := s.PayloadSchema(); p != nil {
			fmt.Fprintf(b, "    payload schema %s\n", p)
		}
		if s.Workflow() != "" {
			fmt.Fprintf(b, "    starts a run of workflow %s in schema %s, once per start key %s\n", s.Workflow(), s.SchemaNameExpr(), s.DedupKeyExpr())
		} else {
			fmt.Fprintf(b, "    creates %s in schema %s, dedup key %s\n", s.TaskType(), s.SchemaNameExpr(), s.DedupKeyExpr())
		}
		exprs := s.InputExprs()
		for _, name := range sortedNames(exprs) {
			fmt.Fprintf(b, "    input %s = %s\n", name, exprs[name])
		}
	})
}

// writeSchedulesText prints the schedule table.
func writeSchedulesText(b *strings.Builder, set *spec.Set) {
	writeSpecsText(b, "schedules", "none", set.Schedules(), func(s *spec.Schedule) {
		fmt.Fprintf(b, "    cron %q in %s, missed ticks: %s\n", s.Cron(), s.Location(), s.Missed())
		if s.Workflow() != "" {
			fmt.Fprintf(b, "    starts a run of workflow %s in schema %s with inputs %s, one per tick\n", s.Workflow(), s.SchemaName(), s.Inputs())
		} else {
			fmt.Fprintf(b, "    creates %s in schema %s with inputs %s\n", s.TaskType(), s.SchemaName(), s.Inputs())
		}
	})
}

// writeRunnersText prints the Runner specs.
func writeRunnersText(b *strings.Builder, set *spec.Set) {
	writeSpecsText(b, "runners", "none besides the local background and sync runners", set.Runners(), func(r *spec.Runner) {
		cr := r.CloudRun()
		fmt.Fprintf(b, "    %s, priority %d, project %s, region %s\n", r.Type(), r.Priority(), cr.Project, cr.Region)
		for _, tt := range r.TaskTypes() {
			fmt.Fprintf(b, "    %s -> job %s\n", tt, cr.Jobs[tt])
		}
	})
}

// namedSpec is a compiled spec as the text sections list it.
type namedSpec interface {
	Name() string
	Source() spec.Location
}

// writeSpecsText prints one section of the text output: its title, then
// each spec's name and source followed by what detail prints of it; a
// section without specs says none (nothing when none is "").
func writeSpecsText[T namedSpec](b *strings.Builder, title, none string, specs []T, detail func(T)) {
	fmt.Fprintf(b, "\n%s:\n", title)
	if len(specs) == 0 && none != "" {
		fmt.Fprintf(b, "  %s\n", none)
	}
	for _, s := range specs {
		fmt.Fprintf(b, "  %s  (%s)\n", s.Name(), s.Source())
		detail(s)
	}
}

// handlerText describes a handler in one line.
func handlerText(h spec.Handler) string {
	switch h.Kind {
	case spec.HandlerBuiltin:
		return "builtin " + h.Builtin
	case spec.HandlerExec:
		args := make([]string, len(h.Exec.Command))
		for i, a := range h.Exec.Command {
			args[i] = shellWord(a)
		}
		s := "exec " + strings.Join(args, " ")
		if h.Exec.Dir != "" {
			s += " in " + h.Exec.Dir
		}
		if len(h.Exec.Env) > 0 {
			s += " with env " + strings.Join(sortedNames(h.Exec.Env), ", ")
		}
		return s
	case spec.HandlerHTTP:
		return fmt.Sprintf("http POST %s (timeout %s)", h.HTTP.URL, spec.FormatDuration(h.HTTP.Timeout))
	}
	return string(h.Kind)
}

// shellWord quotes an argument when it would not read as one word.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`") {
		return s
	}
	return strconv.Quote(s)
}

// concurrencyText describes concurrency limits.
func concurrencyText(c spec.Concurrency) string {
	var parts []string
	if c.PerInstance > 0 {
		parts = append(parts, strconv.Itoa(c.PerInstance)+" per instance")
	}
	if c.Global > 0 {
		parts = append(parts, strconv.Itoa(c.Global)+" in all")
	}
	if c.PerTenant > 0 {
		parts = append(parts, strconv.Itoa(c.PerTenant)+" per tenant")
	}
	if len(parts) == 0 {
		return "unlimited"
	}
	return strings.Join(parts, ", ")
}

// rateText describes a rate limit ("" when none).
func rateText(r spec.RateLimit) string {
	if r.Interval == 0 {
		return ""
	}
	var parts []string
	if r.Starts > 0 {
		parts = append(parts, strconv.Itoa(r.Starts)+" in all")
	}
	if r.PerTenant > 0 {
		parts = append(parts, strconv.Itoa(r.PerTenant)+" per tenant")
	}
	return "    rate limit: " + strings.Join(parts, ", ") + " per " + spec.FormatDuration(r.Interval) + "\n"
}

// reportersText lists reporters, or says there are none.
func reportersText(rs []spec.ReporterKind) string {
	if len(rs) == 0 {
		return "none"
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// sortedNames returns the keys of m, sorted.
func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// leaseText prints a task type's visibility timeout, or says that the
// engine's setting applies.
func leaseText(d time.Duration) string {
	if d == 0 {
		return "default (the config's visibility_timeout)"
	}
	return spec.FormatDuration(d)
}
