package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/spec"
)

// followReloads makes the engine rt builds reload its specs from the
// configured spec paths (the files as they are now, validated as at start,
// their reporters checked) and, after a reload, builds the task reporters
// and the HTTP API's routes (api returns the running API) for the new set.
func followReloads(c *cli.Context, rt *runtime, api func() *apiHandle) {
	rt.specSource = func() (*spec.Set, error) {
		set, err := spec.Load(spec.Options{Builtins: handlerNames(c)}, rt.cfg.Specs...)
		if err != nil {
			return nil, fmt.Errorf("invalid specs: %w", err)
		}
		if _, err := rt.reporters.check(set); err != nil {
			return nil, err
		}
		return set, nil
	}
	rt.onReload = func(set *spec.Set) {
		if err := rt.reporters.use(set); err != nil {
			rt.log.Error("reporters not reloaded", "err", err)
		}
		if h := api(); h != nil {
			if err := h.reload(set); err != nil {
				rt.log.Error("HTTP API not reloaded", "err", err)
			}
		}
	}
}

// reloadOnSIGHUP reloads eng's specs at each SIGHUP until ctx ends or the
// returned stop is called (engine.Engine.ReloadSpecs logs the outcome: a
// bad spec keeps the old set running). A SIGHUP that comes because the
// terminal wf run was started from went away (it had one, and it cannot
// open it any more) calls hangup instead, which stops wf run as Ctrl-C
// would: closing the terminal still stops a wf run started in it.
func reloadOnSIGHUP(ctx context.Context, eng *engine.Engine, log *slog.Logger, hangup func()) (stop func()) {
	hadTerminal := hasTerminal()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-hup:
				if hadTerminal && !hasTerminal() {
					log.Warn("the terminal went away (SIGHUP): stopping, as on Ctrl-C")
					hangup()
					return
				}
				_, _ = eng.ReloadSpecs(ctx)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// hasTerminal reports whether the process has a controlling terminal it
// can open.
func hasTerminal() bool {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	_ = f.Close()
	return true
}
