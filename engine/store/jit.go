package store

import "github.com/jackc/pgx/v5"

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
