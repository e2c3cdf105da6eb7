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
	var plan strings.Builder
	for _, line := range Strings(t, ctx, q, "EXPLAIN ("+options+") "+sql, args...) {
		plan.WriteString(line + "\n")
	}
	t.Log(plan.String())
	return plan.String()
}

// Strings runs sql, a query of one text column, with args on q and returns
// its rows' values in order (nil for no row).
func Strings(t testing.TB, ctx context.Context, q Querier, sql string, args ...any) []string {
	t.Helper()
	rows, err := q.Query(ctx, sql, args...)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}
