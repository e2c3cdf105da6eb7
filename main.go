// Command wf is the declarative task and event engine: see README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/wfhq/wf/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
