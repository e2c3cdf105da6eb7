// Package presence makes an instance that takes no part in the leader
// election (`wf serve`) visible in the database: it holds one connection
// whose application_name names the instance, so the dashboard's instance
// list (store.ReadOverview, from pg_stat_activity) shows it beside the
// engines, whose election connections are named the same way.
package presence

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/clock"
)

// AppNamePrefix starts the application_name of a presence connection:
// "wf-serve:<service>:<owner>".
const AppNamePrefix = "wf-serve:"

// Config configures Hold.
type Config struct {
	// Service is the service name (NAME) the instance belongs to.
	Service string
	// Owner identifies the instance.
	Owner string
	// ConnConfig opens the connection (a session connection: through a
	// transaction-mode pooler, the pooler's own connection would be named).
	ConnConfig *pgx.ConnConfig
	// Every is how often the connection is checked, and how long a failed
	// connection waits before the next attempt. Default 30s.
	Every time.Duration
	// Logger receives connection failures. Default slog.Default().
	Logger *slog.Logger
}

// Hold keeps the presence connection open until ctx ends: it connects,
// pings every cfg.Every, and reconnects after a failure. It returns nil when
// ctx ends, and an error only for a configuration it cannot use.
func Hold(ctx context.Context, cfg Config) error {
	if cfg.ConnConfig == nil || cfg.Service == "" || cfg.Owner == "" {
		return errors.New("error holding the presence connection: no connection config, service or owner")
	}
	every := cmp.Or(cfg.Every, 30*time.Second)
	log := cmp.Or(cfg.Logger, slog.Default()).With("service", cfg.Service, "owner", cfg.Owner)
	cc := cfg.ConnConfig.Copy()
	cc.RuntimeParams["application_name"] = AppNamePrefix + cfg.Service + ":" + cfg.Owner
	failing := false
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cc)
		if err == nil {
			if failing {
				log.Info("presence connection: connected again")
				failing = false
			}
			err = keep(ctx, conn, every)
			_ = conn.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			return nil
		}
		if !failing {
			log.Warn("presence connection: lost, retrying", "err", err, "every", every)
			failing = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
	return nil
}

// keep pings conn every interval (of wall time) until ctx ends or a ping
// fails.
func keep(ctx context.Context, conn *pgx.Conn, every time.Duration) error {
	var err error
	clock.Every(ctx, clock.Real{}, every, func() bool {
		err = conn.Ping(ctx)
		return err == nil
	})
	return err
}
