package engine

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/wfhq/wf/engine/clock"
)

// minDeclarationTTL is the least time an instance's statement of the
// workflows it declares holds (store.DeclareWorkflows): longer than a
// restart, so that the runs of an instance restarting with the same specs
// are not failed meanwhile.
const minDeclarationTTL = 2 * time.Minute

// declarationInterval is how often an instance renews its statement, and
// how often the leader looks for runs of workflows that no live instance
// declares: the janitor's interval.
func (e *Engine) declarationInterval() time.Duration {
	return cmp.Or(e.cfg.JanitorInterval, 30*time.Second)
}

// declarationTTL is how long one statement holds: three renewals, and at
// least minDeclarationTTL.
func (e *Engine) declarationTTL() time.Duration {
	return max(minDeclarationTTL, 3*e.declarationInterval())
}

// declareWorkflows states which workflows this instance's specs declare
// (none without specs: the statement still says that this instance, whose
// election connection the leader sees, knows no other).
func (e *Engine) declareWorkflows(ctx context.Context) error {
	var names []string
	if wfs := e.Workflows(); wfs != nil {
		names = wfs.Names()
	}
	if err := e.store.DeclareWorkflows(ctx, e.cfg.Owner, e.cfg.Name, names, e.declarationTTL(), e.cfg.Clock.DBNow()); err != nil {
		return fmt.Errorf("error stating the workflows this instance declares: %w", err)
	}
	return nil
}

// runDeclarations renews the statement of this instance's workflows every
// declarationInterval of wall time until ctx ends (every instance). The
// statement is left to run out after a stop, so a restart keeps it.
func (e *Engine) runDeclarations(ctx context.Context) error {
	fails := e.newFailureLog("workflow declaration")
	clock.Every(ctx, clock.Real{}, e.declarationInterval(), func() bool {
		if err := e.declareWorkflows(ctx); err != nil && ctx.Err() == nil {
			fails.failed(err)
		} else if err == nil {
			fails.ok()
		}
		return true
	})
	return nil
}

// runUndeclaredRuns fails, every declarationInterval of wall time, the
// runs of workflows that no live instance declares any more
// (workflow.Workflows.FailUndeclared; leader only).
func (e *Engine) runUndeclaredRuns(ctx context.Context) error {
	return e.workflowPass(ctx, e.declarationInterval(), "undeclared workflows",
		"workflow runs failed: no running instance declares their workflow", "runs",
		func() (int, error) { return e.Workflows().FailUndeclared(ctx, e.store, 100) })
}
