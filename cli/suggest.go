package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/internal/editdist"
)

// groupAction is the action of the app and of every command that only
// groups subcommands (wf tasks, wf migrate …): without an argument it shows
// the help and is a usage error (exit 2: a script that ran `wf` alone did
// nothing); with one, that names no command, it is a usage error that
// suggests the nearest command, as git does.
func groupAction(c *cli.Context) error {
	if c.NArg() == 0 {
		where := "wf"
		if c.Command != nil && c.Command.Name != "" {
			where = c.Command.HelpName
			if err := cli.ShowSubcommandHelp(c); err != nil {
				return err
			}
		} else if err := cli.ShowAppHelp(c); err != nil {
			return err
		}
		return Usagef("%s needs a command (listed above)", where)
	}
	name := c.Args().First()
	where, cmds := "wf", c.App.Commands
	if c.Command != nil && len(c.Command.Subcommands) > 0 {
		where, cmds = c.Command.HelpName, c.Command.Subcommands
	}
	if near := nearestCommand(name, cmds); near != "" {
		return Usagef("%q is not a %s command; did you mean %q?", name, where, near)
	}
	names := make([]string, 0, len(cmds))
	for _, cmd := range cmds {
		if !cmd.Hidden {
			names = append(names, cmd.Name)
		}
	}
	return Usagef("%q is not a %s command; the commands are %s", name, where, strings.Join(names, ", "))
}

// setGroupActions gives every command that groups subcommands and has no
// action of its own the groupAction, and every command flagUsageError.
func setGroupActions(cmds []*cli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = groupAction
		}
		if c.OnUsageError == nil {
			c.OnUsageError = flagUsageError
		}
		setGroupActions(c.Subcommands)
	}
}

// flagUsageError is a command's answer to a flag it cannot parse: one line
// that names the command's help (urfave/cli's default printed the error,
// the whole help, and then Main printed the error again).
func flagUsageError(c *cli.Context, err error, _ bool) error {
	name := "wf"
	if c.Command != nil && c.Command.HelpName != "" {
		name = c.Command.HelpName
	}
	return Usagef("%w (see '%s --help')", err, name)
}

// nearestCommand returns the visible command (or alias) closest to name: one
// that name is a prefix of, or else within a few edits; "" when none is close.
func nearestCommand(name string, cmds []*cli.Command) string {
	var names []string
	command := map[string]string{} // name or alias to the command's name
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, n := range c.Names() {
			names = append(names, n)
			command[n] = c.Name
		}
	}
	return command[nearestName(name, names)]
}

// nearestName returns the name that name is a prefix of, or else the one
// within the fewest edits if that is at most a third of name and at least
// two; "" when none is close.
func nearestName(name string, names []string) string {
	best, bestDist := "", len(name)/3+2
	for _, n := range names {
		if strings.HasPrefix(n, name) {
			return n
		}
		if d := editdist.Levenshtein(name, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// flagsAfterArgs returns the command's arguments, reading the flags given
// after its first nargs arguments (wf tasks show ID --format json):
// urfave/cli stops at the first argument, so they arrive as arguments. Each
// one found is set on c; a mistake there is a usage error.
func flagsAfterArgs(c *cli.Context, nargs int) ([]string, error) {
	args := c.Args().Slice()
	if len(args) <= nargs {
		return args, nil
	}
	fs := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		if err := f.Apply(fs); err != nil {
			return nil, fmt.Errorf("error reading the flags of %s: %w", c.Command.Name, err)
		}
	}
	if err := fs.Parse(args[nargs:]); err != nil {
		return nil, Usagef("%s: %v", c.Command.Name, err)
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil {
			err = c.Set(f.Name, f.Value.String())
		}
	})
	if err != nil {
		return nil, Usagef("%s: %v", c.Command.Name, err)
	}
	return append(args[:nargs:nargs], fs.Args()...), nil
}
