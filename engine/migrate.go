package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/internal/dbmigrate"
)

// Migrate brings the database up to wf's schema: it applies the embedded
// migrations not yet applied (none when it is current). It holds an
// advisory lock while it works, so instances that start at once take turns.
// Call it before New in a program that embeds wf (wf run does it itself).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error acquiring a connection to migrate: %w", err)
	}
	defer conn.Release()
	if _, err := dbmigrate.Up(ctx, conn.Conn()); err != nil {
		return fmt.Errorf("error migrating the database: %w", err)
	}
	return nil
}
