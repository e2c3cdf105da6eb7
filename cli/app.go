// Package cli is the wf command line: validate, compile, migrate, run,
// enqueue, tasks, events, exec and bench. It wires configuration, specs, the
// store and the engine together; every other package stays free of flags.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/internal/buildinfo"
	"github.com/wfhq/wf/runners/builtin"
)

// Exit codes shared by every command.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Options customise the wf application for programs that embed wf and
// register Go handlers of their own.
type Options struct {
	// Registry holds the builtin handlers; nil means builtin.NewRegistry().
	Registry *builtin.Registry
	// CloudRun tunes the runners built from cloudrun Runner specs.
	CloudRun CloudRunOptions
}

// registryKey is where the app keeps its Options in cli.App.Metadata.
const registryKey = "wf.registry"

// NewApp builds the wf application. It writes to stdout and stderr as given,
// so tests can run commands in-process.
func NewApp(stdout, stderr io.Writer) *cli.App { return NewAppWith(stdout, stderr, Options{}) }

// NewAppWith builds the wf application with opts.
func NewAppWith(stdout, stderr io.Writer, opts Options) *cli.App {
	if opts.Registry == nil {
		opts.Registry = builtin.NewRegistry()
	}
	app := &cli.App{
		Metadata: map[string]any{registryKey: opts.Registry, cloudRunKey: opts.CloudRun},
		Name:     "wf",
		// --version (and -v) prints "wf version <version> (commit …, go…)".
		Version:   strings.TrimPrefix(buildinfo.Read().String(), "wf "),
		Action:    groupAction,
		Usage:     "a declarative task and event engine on PostgreSQL",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags:     globalFlags(),
		// Usage errors print their own message; exit codes are decided in Main.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
		Commands: []*cli.Command{
			// Commands register here, one constructor per file.
			validateCommand(),
			schemaCommand(),
			compileCommand(),
			configCommand(),
			migrateCommand(),
			runCommand(),
			reloadCommand(),
			enqueueCommand(),
			tasksCommand(),
			workflowsCommand(),
			eventsCommand(),
			webhooksCommand(),
			secretsCommand(),
			execCommand(),
			serveCommand(),
			catalogsCommand(),
			benchCommand(),
		},
	}
	hideHelpCommands(app.Commands)
	setGroupActions(app.Commands)
	return app
}

// hideHelpCommands drops the "help" subcommands: urfave/cli v2 shares one
// help command object across apps and writes to it on every run, a data race
// when tests run commands in parallel. --help works as usual.
func hideHelpCommands(cmds []*cli.Command) {
	for _, c := range cmds {
		c.HideHelpCommand = true
		hideHelpCommands(c.Subcommands)
	}
}

// builtinRegistry returns the builtin handler registry of the running app,
// as the program gave it: the handlers that need dependencies (the
// catalog's) are bound into a clone of it when a command opens its runtime
// (bindCatalog); handlerNames lists them all for validation.
func builtinRegistry(c *cli.Context) *builtin.Registry {
	if r, ok := c.App.Metadata[registryKey].(*builtin.Registry); ok {
		return r
	}
	return builtin.NewRegistry()
}

// Main runs the application with args (os.Args) and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainWith(ctx, args, stdout, stderr, Options{})
}

// MainWith is Main with Options: a program embedding wf registers its own
// Go handlers in opts.Registry and calls MainWith from its main.
func MainWith(ctx context.Context, args []string, stdout, stderr io.Writer, opts Options) int {
	app := NewAppWith(stdout, stderr, opts)
	err := app.RunContext(ctx, args)
	if err == nil {
		return ExitOK
	}
	var exitErr cli.ExitCoder
	if errors.As(err, &exitErr) {
		if msg := exitErr.Error(); msg != "" {
			fmt.Fprintln(stderr, "wf:", msg)
		}
		return exitErr.ExitCode()
	}
	var usage usageError
	if errors.As(err, &usage) || isFlagError(err) {
		fmt.Fprintln(stderr, "wf: usage:", err)
		return ExitUsage
	}
	fmt.Fprintln(stderr, "wf:", err)
	return ExitFailure
}

// usageError marks a mistake in how a command was called (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// Usagef returns a usage error (exit code 2) with a formatted message.
func Usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// oneArgument is the usage error of a command, called name in the message,
// that takes exactly one argument (arg) before its flags, when it got
// another number of them; nil otherwise.
func oneArgument(c *cli.Context, name, arg string) error {
	if c.NArg() != 1 {
		return Usagef("%s takes one %s argument (flags go before it), got %d arguments", name, arg, c.NArg())
	}
	return nil
}

// noArguments is the usage error of a command, called name in the message,
// that takes no arguments, when it got some; nil otherwise.
func noArguments(c *cli.Context, name string) error {
	if c.NArg() > 0 {
		return Usagef("%s takes no arguments, got %q", name, c.Args().First())
	}
	return nil
}

// oneArgumentFormat checks a command that takes exactly one argument (see
// oneArgument) and --format text or json, and returns the format.
func oneArgumentFormat(c *cli.Context, name, arg string) (string, error) {
	if err := oneArgument(c, name, arg); err != nil {
		return "", err
	}
	return checkFormat(c, formatText, formatJSON)
}

// isFlagError recognises the flag-parsing errors urfave/cli returns without
// calling OnUsageError (unknown flags and commands).
func isFlagError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"flag provided but not defined", "No help topic for", "invalid value"} {
		if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}
