package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/runners/builtin"
)

// defaultSpecPath is where the spec commands look when given no PATH.
const defaultSpecPath = "specs"

// Output formats of the spec commands.
const (
	formatText   = "text"
	formatJSON   = "json"
	formatDOT    = "dot"
	formatGitHub = "github"
)

// specOptions are the options specs are compiled with in a default wf app:
// the handlers of runners/builtin's default registry, plus the webhook,
// feature and gcp handlers (bound to the database when a command runs
// tasks, see bindCatalog). Commands compile against their app's
// (handlerNames).
func specOptions() spec.Options {
	return spec.Options{Builtins: slices.Concat(builtin.Names(), webhooks.Names(), builtins.Names(), gcp.Names())}
}

// specPaths returns the PATH arguments of a spec command, or the default.
// Flags after a PATH are not parsed (urfave/cli stops at the first
// argument): say so instead of looking for a file called --format.
func specPaths(c *cli.Context) ([]string, error) {
	if c.NArg() == 0 {
		return []string{defaultSpecPath}, nil
	}
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") {
			return nil, Usagef("flag %s after a PATH: put flags before the paths (wf %s %s PATH...)", a, c.Command.Name, a)
		}
	}
	return c.Args().Slice(), nil
}

// specCommandArgs checks the --format (one of formats) and the PATH
// arguments of a spec command, and returns them.
func specCommandArgs(c *cli.Context, formats ...string) (format string, paths []string, err error) {
	if format, err = checkFormat(c, formats...); err != nil {
		return "", nil, err
	}
	paths, err = specPaths(c)
	return format, paths, err
}

// formatFlag is the --format flag of a spec command.
func formatFlag(formats ...string) *cli.StringFlag {
	return &cli.StringFlag{
		Name:    "format",
		Aliases: []string{"f"},
		Value:   formats[0],
		Usage:   "output `FORMAT`: " + strings.Join(formats, ", "),
	}
}

// checkFormat returns a usage error when --format is not one of formats.
func checkFormat(c *cli.Context, formats ...string) (string, error) {
	f := c.String("format")
	if !slices.Contains(formats, f) {
		return "", Usagef("--format must be one of %s; got %q", strings.Join(formats, ", "), f)
	}
	return f, nil
}

// compileSpecs reads and compiles the specs at paths with opts: the builtin
// handler names (handlerNames: the app's registry, so handlers an app
// registers count, and the catalog's) and the runtime configuration.
// It returns the set, or the spec errors (with the number of files read), or
// another error when the files cannot be read.
func compileSpecs(opts spec.Options, paths []string) (*spec.Set, spec.Errors, int, error) {
	sources, err := spec.ReadSources(paths...)
	if err != nil {
		return nil, nil, 0, cli.Exit(err.Error(), ExitFailure)
	}
	set, err := spec.Compile(sources, opts)
	var errs spec.Errors
	if errors.As(err, &errs) {
		return nil, errs, len(sources), nil
	}
	if err != nil {
		return nil, nil, 0, cli.Exit(err.Error(), ExitFailure)
	}
	return set, nil, len(sources), nil
}

// invalidSpecs is the exit error of a spec command that found problems.
func invalidSpecs(errs spec.Errors) error {
	files := map[string]bool{}
	for _, e := range errs {
		files[e.File] = true
	}
	return cli.Exit(fmt.Sprintf("%s in %s", plural(len(errs), "error"), plural(len(files), "file")), ExitFailure)
}

// plural formats a count with its noun: 1 file, 2 files.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// validateCommand is wf validate: check specs, print every problem.
func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check spec files and print every problem as file:line:col: message",
		ArgsUsage: "[PATH...]",
		Description: "Reads every *.yaml and *.yml file under each PATH (default: the configuration's specs, else " + defaultSpecPath + "/),\n" +
			"checks it against the spec schemas and the semantic rules, and prints every problem found.\n" +
			"Exits 0 when the specs are valid, 1 when they are not. --format github prints GitHub Actions\n" +
			"workflow commands, so the problems show on the lines of a pull request.\n\n" +
			"The specs are also checked against the configuration wf run would use (--config FILE,\n" +
			"$" + config.EnvConfigFile + ", ./" + config.DefaultFile + ", WF_* variables), e.g. every lease against heartbeat_interval.\n" +
			"Without a configuration file they are checked against the defaults, and a note says so.",
		Flags: []cli.Flag{
			formatFlag(formatText, formatJSON, formatGitHub),
			&cli.StringFlag{Name: "config", Usage: "check against the configuration `FILE` wf run will use (as wf --config FILE validate)"},
		},
		Action: runValidate,
	}
}

// runValidate is the action of wf validate.
func runValidate(c *cli.Context) error {
	format, paths, err := specCommandArgs(c, formatText, formatJSON, formatGitHub)
	if err != nil {
		return err
	}
	cfg, err := loadConfigFile(c, validateConfigFile(c))
	if err != nil {
		return err
	}
	if c.NArg() == 0 && cfg.File() != "" {
		paths = cfg.Specs // the specs wf run would load
	}
	set, errs, files, err := compileSpecs(spec.Options{Builtins: handlerNames(c), Runtime: specRuntime(cfg)}, paths)
	if err != nil {
		return err
	}
	note := configNote(cfg)
	w := c.App.Writer
	if errs != nil {
		if err := writeSpecErrors(w, format, errs, files, note); err != nil {
			return outputError(err)
		}
		writeTextNote(c, format, note)
		return invalidSpecs(errs)
	}
	if err := writeValidSummary(w, format, set, note); err != nil {
		return outputError(err)
	}
	writeTextNote(c, format, note)
	return nil
}

// validateConfigFile is the --config given to wf validate itself, else the
// global one ("" when neither is: config.Load then looks further).
func validateConfigFile(c *cli.Context) string {
	for _, ctx := range c.Lineage() {
		if ctx.IsSet("config") {
			return ctx.String("config")
		}
	}
	return ""
}

// specRuntime is the part of the configuration specs are checked against.
func specRuntime(cfg *config.Config) *spec.Runtime {
	return &spec.Runtime{HeartbeatInterval: cfg.HeartbeatInterval, VisibilityTimeout: cfg.VisibilityTimeout}
}

// validateNote says which checks wf validate could not make against the
// configuration wf run will use, because none was given.
type validateNote struct {
	Message string   `json:"message"`
	Checks  []string `json:"checks"`
}

// configNote returns the note for a configuration loaded with no file, or
// nil when a file was read.
func configNote(cfg *config.Config) *validateNote {
	if cfg.File() != "" {
		return nil
	}
	return &validateNote{
		Message: fmt.Sprintf("no configuration file (--config FILE, $%s or ./%s): these checks used wf's defaults and WF_* variables (heartbeat_interval %s, visibility_timeout %s), not necessarily what wf run will use",
			config.EnvConfigFile, config.DefaultFile, spec.FormatDuration(cfg.HeartbeatInterval), spec.FormatDuration(cfg.VisibilityTimeout)),
		Checks: spec.RuntimeChecks(),
	}
}

// writeTextNote prints the note on standard error in text format (JSON
// and GitHub carry it in their output).
func writeTextNote(c *cli.Context, format string, note *validateNote) {
	if note == nil || format != formatText {
		return
	}
	fmt.Fprintf(c.App.ErrWriter, "note: %s:\n", note.Message)
	for _, check := range note.Checks {
		fmt.Fprintf(c.App.ErrWriter, "  - %s\n", check)
	}
}

// validateJSON is the output of wf validate --format json.
type validateJSON struct {
	Valid         bool        `json:"valid"`
	Files         int         `json:"files"`
	TaskTypes     int         `json:"task_types"`
	Subscriptions int         `json:"subscriptions"`
	Schedules     int         `json:"schedules"`
	Runners       int         `json:"runners"`
	Errors        []errorJSON `json:"errors"`
	// Note lists the checks made against defaults for want of a
	// configuration file; absent when one was given.
	Note *validateNote `json:"note,omitempty"`
}

// errorJSON is one spec error in JSON.
type errorJSON struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

// writeSpecErrors prints spec errors in the given format.
func writeSpecErrors(w io.Writer, format string, errs spec.Errors, files int, note *validateNote) error {
	var b strings.Builder
	switch format {
	case formatJSON:
		out := validateJSON{Files: files, Errors: make([]errorJSON, len(errs)), Note: note}
		for i, e := range errs {
			out.Errors[i] = errorJSON{File: e.File, Line: e.Line, Col: e.Col, Message: e.Message}
		}
		return writeJSON(w, out)
	case formatGitHub:
		for _, e := range errs {
			fmt.Fprintf(&b, "::error file=%s,line=%d,col=%d::%s\n", escapeGitHubProperty(e.File), e.Line, e.Col, escapeGitHubData(e.Message))
		}
		writeGitHubNote(&b, note)
	default:
		for _, e := range errs {
			b.WriteString(e.String() + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeValidSummary prints what a valid set holds.
func writeValidSummary(w io.Writer, format string, set *spec.Set, note *validateNote) error {
	if format == formatJSON {
		return writeJSON(w, validateJSON{
			Valid:         true,
			Files:         len(set.Files()),
			TaskTypes:     len(set.TaskTypes()),
			Subscriptions: len(set.Subscriptions()),
			Schedules:     len(set.Schedules()),
			Runners:       len(set.Runners()),
			Errors:        []errorJSON{},
			Note:          note,
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ok: %s in %s\n", setSummary(set), plural(len(set.Files()), "file"))
	if format == formatGitHub {
		writeGitHubNote(&b, note)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeGitHubNote prints the note as a GitHub Actions notice.
func writeGitHubNote(b *strings.Builder, note *validateNote) {
	if note == nil {
		return
	}
	fmt.Fprintf(b, "::notice title=wf validate::%s\n", escapeGitHubData(note.Message+": "+strings.Join(note.Checks, "; ")))
}

// setSummary counts what a set holds: 3 task types, 1 subscription, ...
func setSummary(set *spec.Set) string {
	parts := []string{
		plural(len(set.TaskTypes()), "task type"),
		plural(len(set.Subscriptions()), "subscription"),
		plural(len(set.Schedules()), "schedule"),
		plural(len(set.Runners()), "runner"),
	}
	if n := len(set.Workflows()); n > 0 {
		parts = append(parts, plural(n, "workflow"))
	}
	return strings.Join(parts, ", ")
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("error encoding JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// escapeGitHubData escapes the message of a workflow command.
func escapeGitHubData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeGitHubProperty escapes a property value of a workflow command.
func escapeGitHubProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
