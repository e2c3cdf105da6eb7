package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/api/option"

	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/runners/cloudrun"
)

// CloudRunOptions tune the Cloud Run runners that `wf run` builds from the
// cloudrun Runner specs, for programs that embed wf and for tests.
type CloudRunOptions struct {
	// ClientOptions are passed to the Cloud Run clients: an emulator's
	// endpoint, explicit credentials. None means Google's endpoint with
	// Application Default Credentials.
	ClientOptions []option.ClientOption
	// PollInterval is how often a running execution is polled; zero means
	// cloudrun.DefaultPollInterval.
	PollInterval time.Duration
}

// cloudRunKey is where the app keeps its CloudRunOptions in cli.App.Metadata.
const cloudRunKey = "wf.cloudrun"

// cloudRunOptions returns the Cloud Run options of the running app.
func cloudRunOptions(c *cli.Context) CloudRunOptions {
	o, _ := c.App.Metadata[cloudRunKey].(CloudRunOptions)
	return o
}

// cloudRunRunners builds one Cloud Run runner per cloudrun Runner spec, to
// join the local runners by priority, and a function that closes them. A
// spec set without such a Runner gives none: its task types run locally.
func cloudRunRunners(ctx context.Context, specs *spec.Set, tasks cloudrun.TaskReader, opts CloudRunOptions, log *slog.Logger) ([]runners.Runner, func(), error) {
	var built []*cloudrun.Runner
	closeAll := func() {
		for _, r := range built {
			if err := r.Close(); err != nil {
				log.Warn("closing a Cloud Run runner failed", "runner", r.Name(), "err", err)
			}
		}
	}
	var out []runners.Runner
	for _, rs := range specs.Runners() {
		if rs.Type() != spec.RunnerCloudRun {
			continue
		}
		s := rs.CloudRun()
		r, err := cloudrun.New(ctx, cloudrun.Config{
			Name: rs.Name(), Priority: rs.Priority(), Project: s.Project, Region: s.Region, Jobs: s.Jobs,
			Tasks: tasks, PollInterval: opts.PollInterval, ClientOptions: opts.ClientOptions, Logger: log,
		})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%w (Runner %s, %s)", err, rs.Name(), rs.Source())
		}
		built = append(built, r)
		out = append(out, r)
		log.Info("Cloud Run runner ready", "runner", r.Name(), "priority", r.Priority(), "task_types", rs.TaskTypes(), "source", rs.Source().String())
	}
	return out, closeAll, nil
}
