package dbtest

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// StatementLog records the SQL of every statement a pool sends (BEGIN and
// COMMIT included), lower-cased and trimmed: set it as the pool's
// ConnConfig.Tracer (PoolWith) to see how many statements a call costs.
type StatementLog struct {
	mu  sync.Mutex
	sql []string
}

// TraceQueryStart implements pgx.QueryTracer.
func (l *StatementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql = append(l.sql, strings.ToLower(strings.TrimSpace(d.SQL)))
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (l *StatementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Take returns the statements sent since the last Take, and forgets them.
func (l *StatementLog) Take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.sql
	l.sql = nil
	return out
}
