package dbtest

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Querier runs a query: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Explain runs EXPLAIN (options) of sql with args on q, such as options
// "ANALYZE, COSTS OFF", logs the plan and returns it, a line a row: what a
// test of a statement's plan asserts on.
func Explain(t testing.TB, ctx context.Context, q Querier, options, sql string, args ...any) string {
	t.Helper()
	rows, err := q.Query(ctx, "EXPLAIN ("+options+") "+sql, args...)
	require.NoError(t, err)
	var plan strings.Builder
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan.WriteString(line + "\n")
	}
	require.NoError(t, rows.Err())
	t.Log(plan.String())
	return plan.String()
}
