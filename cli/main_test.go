package cli

import (
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) {
	// urfave/cli v2 writes to its package-level HelpFlag (a *BoolFlag) each
	// time an app or command parses flags: a data race once tests run Main
	// in parallel. The wf binary runs Main once per process, so only tests
	// swap in a flag that keeps no state.
	cli.HelpFlag = statelessHelpFlag{}
	code := dbtest.Main(m)
	removeWFBuild()
	os.Exit(code)
}

// statelessHelpFlag is --help/-h without the shared state of cli.BoolFlag.
type statelessHelpFlag struct{}

func (statelessHelpFlag) Apply(set *flag.FlagSet) error {
	for _, name := range (statelessHelpFlag{}).Names() {
		set.Bool(name, false, "show help")
	}
	return nil
}

func (statelessHelpFlag) Names() []string { return []string{"help", "h"} }
func (statelessHelpFlag) IsSet() bool     { return false }
func (statelessHelpFlag) String() string  { return "--help, -h\tshow help" }

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"config", "show", "--help"}, {"migrate", "--help"}} {
		code, out, errOut := runWF(t, args...)
		require.Equal(t, ExitOK, code, errOut)
		require.Contains(t, out, "USAGE:")
	}
}

// TestOneArgumentUsage: a command that takes one argument before its flags
// says so, naming it, when it gets none or two (exit 2, nothing done).
func TestOneArgumentUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"enqueue"}, "enqueue takes one TYPE argument (flags go before it), got 0 arguments"},
		{[]string{"events", "emit", "a", "b"}, "events emit takes one TYPE argument (flags go before it), got 2 arguments"},
		{[]string{"workflows", "start"}, "start takes one WORKFLOW argument (flags go before it), got 0 arguments"},
	} {
		code, _, errOut := runWF(t, tc.args...)
		require.Equal(t, ExitUsage, code, errOut)
		require.Equal(t, "wf: usage: "+tc.want+"\n", errOut)
	}
}
