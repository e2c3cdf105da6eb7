package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/maintenance/scheduler"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
)

// eventServices builds what `wf run` adds to the engine for events,
// schedules and retention:
//
//   - the event consumer, on every instance, when any Subscription spec
//     exists (no flag: declaring a subscription is the opt-in);
//   - the scheduler, on the leader, when any Schedule spec exists;
//   - the maintenance supervisor, on the leader, always.
func eventServices(cfg *config.Config, st *store.Store, cl *client.Client, specs *spec.Set, owner string, log *slog.Logger) (
	services []func(context.Context, *signalbus.Bus), leader []func(context.Context), err error) {
	if len(specs.Subscriptions()) > 0 {
		cons, err := events.NewConsumer(events.ConsumerConfig{Store: st, Client: cl, Specs: specs, Owner: owner, Logger: log})
		if err != nil {
			return nil, nil, err
		}
		services = append(services, cons.Run)
	}
	if len(specs.Schedules()) > 0 {
		sched, err := scheduler.New(scheduler.Config{Store: st, Client: cl, Schedules: specs.Schedules(), Logger: log})
		if err != nil {
			return nil, nil, err
		}
		leader = append(leader, sched.Run)
	}
	r := cfg.Retention
	sup, err := maintenance.New(maintenance.Config{
		Store: st, Interval: cfg.MaintenanceInterval, PartitionsAhead: r.PartitionsAhead, Logger: log,
		Retention: maintenance.Retention{
			Completed: r.Completed, Failed: r.Failed, DeadLetter: r.DeadLetter, DeadLetterEvents: r.DeadLetterEvents,
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("error configuring maintenance: %w", err)
	}
	leader = append(leader, sup.Run)
	return services, leader, nil
}
