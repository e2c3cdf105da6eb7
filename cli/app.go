// Package cli is the wf command line: validate, compile, migrate, run,
// enqueue, tasks, events, exec and bench. It wires configuration, specs, the
// store and the engine together; every other package stays free of flags.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// Exit codes shared by every command.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// NewApp builds the wf application. It writes to stdout and stderr as given,
// so tests can run commands in-process.
func NewApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "wf",
		Usage:     "a declarative task and event engine on PostgreSQL",
		Writer:    stdout,
		ErrWriter: stderr,
		// Usage errors print their own message; exit codes are decided in Main.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
		Commands: []*cli.Command{
			// Commands register here, one constructor per file.
		},
	}
	return app
}

// Main runs the application with args (os.Args) and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := NewApp(stdout, stderr)
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
