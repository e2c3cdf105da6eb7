// Command withdb starts one throwaway PostgreSQL cluster, runs the command
// given after "--" with WF_TEST_DATABASE_URL pointing at it, stops the cluster
// and exits with the command's exit code. `make test` wraps `go test` in it
// so every test package shares one cluster.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/internal/dbtest"
)

func main() { os.Exit(run()) }

func run() int {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withdb -- COMMAND [ARG...]")
		return 2
	}
	if os.Getenv(dbtest.EnvURL) != "" {
		if err := dbtest.CheckServerClock(); err != nil {
			fmt.Fprintln(os.Stderr, "withdb:", err)
			return 1
		}
		return runCommand(args, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cluster, stop, err := dbtest.StartThrowaway(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withdb:", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "withdb:", err)
		}
	}()
	env := []string{dbtest.EnvURL + "=" + cluster.URL("postgres")}
	if d := clock.Offset(); d != 0 {
		// Every test process moves its clock by the server's offset.
		env = append(env, fmt.Sprintf("%s=%d", clock.EnvTestOffset, int64(d/time.Second)))
		fmt.Fprintf(os.Stderr, "withdb: running as if it were %s (%s=%s)\n", clock.Now().Format(time.RFC3339), clock.EnvTestNow, os.Getenv(clock.EnvTestNow))
	}
	return runCommand(args, env)
}

func runCommand(args, env []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withdb:", err)
		return 1
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "withdb:", err)
		return 1
	}
	return 0
}
