package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DisableJIT turns PostgreSQL's JIT compilation off for connections made
// with cc (the jit startup parameter), unless cc already sets it.
//
// PostgreSQL compiles a statement when the planner's estimated cost passes
// jit_above_cost (100,000 by default), and compiles it again at every
// execution of a cached plan. The estimates of the claim statements grow
// with the backlog of PENDING tasks (the planner cannot know that a claim
// reads only a batch of them): past a few hundred thousand tasks of one
// type every claim would be compiled, 0.3–1 s for a statement that runs in
// milliseconds. Nothing wf runs on its pool gains from JIT.
//
// A transaction-mode pooler (PgBouncer) refuses startup parameters it does
// not know, so do not call this for a pool that goes through one: set
// `ALTER ROLE <wf's role> SET jit = off` on the server instead (README,
// "Production").
func DisableJIT(cc *pgx.ConnConfig) {
	if _, set := cc.RuntimeParams["jit"]; set {
		return
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["jit"] = "off"
}

// ConnectWithoutJIT opens a pool on pcfg whose connections ask for JIT off
// (DisableJIT), and checks that one connection succeeds. A pooler that
// refuses the startup parameter (PgBouncer in session mode, which needs no
// database.session_url: "unsupported startup parameter: jit") gets a pool
// connected as pcfg says, and JIT is left to the server's settings (README:
// ALTER ROLE … SET jit = off). Every pool wf opens on its own database
// without a pooler in transaction mode goes through here: `wf run`'s and
// `wf bench`'s.
func ConnectWithoutJIT(ctx context.Context, pcfg *pgxpool.Config) (*pgxpool.Pool, error) {
	_, asked := pcfg.ConnConfig.RuntimeParams["jit"]
	DisableJIT(pcfg.ConnConfig)
	pool, err := PingedPool(ctx, pcfg)
	if err != nil && !asked && strings.Contains(err.Error(), "unsupported startup parameter") {
		delete(pcfg.ConnConfig.RuntimeParams, "jit")
		pool, err = PingedPool(ctx, pcfg)
	}
	return pool, err
}

// PingedPool opens a pool on pcfg and checks that one connection succeeds.
func PingedPool(ctx context.Context, pcfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
