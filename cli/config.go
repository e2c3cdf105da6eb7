package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/wfhq/wf/config"
)

// configFlagName is the name of the flag of a configuration key, without dashes.
func configFlagName(key string) string { return strings.TrimPrefix(config.FlagName(key), "--") }

// globalFlags are the flags every command shares: where the configuration
// is, and the fields most often overridden. They go before the command
// (wf --data-dir /srv/wf migrate up). Their environment variables are read
// by package config, not by the flags, so that precedence lives in one place.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "configuration `FILE` (default $" + config.EnvConfigFile + ", else ./" + config.DefaultFile + " when it exists)"},
		&cli.StringFlag{Name: configFlagName("database_url"), Usage: "PostgreSQL `URL` (default $WF_DATABASE_URL, which keeps the password out of ps; empty: a local PostgreSQL in <data-dir>/pg)"},
		&cli.StringFlag{Name: configFlagName("name"), Usage: "service `NAME`: instances with one name elect one leader (default $WF_NAME or $NAME, else wf)"},
		&cli.StringFlag{Name: configFlagName("data_dir"), Usage: "`FOLDER` of the local PostgreSQL and local reports (default $WF_DATA_DIR, else ./.wf)"},
		&cli.StringFlag{Name: configFlagName("log_level"), Usage: "lowest `LEVEL` logged: debug, info, warn or error (default $WF_LOG_LEVEL, else info)"},
		&cli.StringFlag{Name: configFlagName("log_format"), Usage: "log `FORMAT`: auto (text on a terminal, JSON otherwise), text or json (default $WF_LOG_FORMAT, else auto)"},
	}
}

// loadConfig loads the configuration for a command: defaults, the file,
// WF_* variables, then the global flags that were set. A bad flag value is
// a usage error (exit 2); any other configuration problem exits 1.
func loadConfig(c *cli.Context) (*config.Config, error) {
	return loadConfigFile(c, c.String("config"))
}

// loadConfigFile is loadConfig with the configuration file named by the
// caller (a command with a --config flag of its own).
func loadConfigFile(c *cli.Context, file string) (*config.Config, error) {
	opts := config.Options{File: file, Flags: map[string]string{}}
	// Global flags, and the command's own flags named after config keys
	// (e.g. wf run --slots).
	for _, key := range config.Keys() {
		if name := configFlagName(key); c.IsSet(name) {
			opts.Flags[key] = c.String(name)
		}
	}
	cfg, err := config.Load(opts)
	if err == nil {
		return cfg, nil
	}
	var errs config.Errors
	if errors.As(err, &errs) {
		if errs.OnlyFlags() {
			return nil, Usagef("%s", err)
		}
		if len(errs) > 1 {
			return nil, cli.Exit("invalid configuration:\n  "+strings.ReplaceAll(err.Error(), "\n", "\n  "), ExitFailure)
		}
	}
	return nil, cli.Exit(err.Error(), ExitFailure)
}

// newLogger builds the logger of a command from the configuration: JSON or
// text as configured, or for "auto" text on a terminal and JSON otherwise.
func newLogger(cfg *config.Config, stderr io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel(), ReplaceAttr: readableAttr}
	text := cfg.LogFormat == config.LogFormatText || (cfg.LogFormat != config.LogFormatJSON && isTerminalWriter(stderr))
	if text {
		return slog.New(slog.NewTextHandler(stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(stderr, opts))
}

// readableAttr writes a duration as text ("20s", as the text handler
// does; JSON had 20000000000 nanoseconds) and a nil slice as an empty list
// (JSON had null where the reader expects a list).
func readableAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		a.Value = slog.StringValue(a.Value.Duration().String())
	case slog.KindAny:
		if v := reflect.ValueOf(a.Value.Any()); v.Kind() == reflect.Slice && v.IsNil() {
			a.Value = slog.AnyValue([]any{})
		}
	}
	return a
}

// isTerminalWriter reports whether w is a character device (a terminal).
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// configCommand is `wf config`: inspect the effective configuration.
func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "inspect the configuration",
		Subcommands: []*cli.Command{{
			Name:  "show",
			Usage: "print the effective configuration (defaults, wf.yaml, WF_* variables, flags) with secrets masked",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "format", Value: "yaml", Usage: "output `FORMAT`: yaml or json"},
			},
			Action: configShow,
		}},
	}
}

// configShow prints the masked configuration as YAML (a valid wf.yaml) or
// JSON.
func configShow(c *cli.Context) error {
	format := c.String("format")
	if format != "yaml" && format != "json" {
		return Usagef("--format must be yaml or json, got %q", format)
	}
	if err := noArguments(c, "config show"); err != nil {
		return err
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	masked := cfg.Masked()
	w := c.App.Writer
	if format == "json" {
		b, err := json.MarshalIndent(masked, "", "  ")
		if err != nil {
			return cli.Exit(fmt.Sprintf("error encoding the configuration: %v", err), ExitFailure)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return outputError(err)
	}
	if f := cfg.File(); f != "" {
		if _, err := fmt.Fprintf(w, "# configuration file: %s\n", f); err != nil {
			return outputError(err)
		}
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(masked); err != nil {
		return cli.Exit(fmt.Sprintf("error encoding the configuration: %v", err), ExitFailure)
	}
	return outputError(enc.Close())
}

// outputError turns a failed write to stdout into an exit-1 error.
func outputError(err error) error {
	if err == nil {
		return nil
	}
	return cli.Exit(fmt.Sprintf("error writing output: %v", err), ExitFailure)
}
