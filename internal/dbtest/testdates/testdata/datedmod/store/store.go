// Package store stands for a store with a dated writer and a live one.
package store

// Store writes rows.
type Store struct{}

// Seed writes rows at times its caller computes.
//
//wf:dated
func (Store) Seed(n int) int { return n }

// Enqueue writes rows at now.
func (Store) Enqueue(n int) int { return n }

// Backdate inserts at a time computed from now() in its SQL.
func (Store) Backdate() string {
	return `INSERT INTO tasks.tasks (timestamp) VALUES (now() - interval '40 days')`
}

// Run is a method named like testing.T's.
func (Store) Run() {}
