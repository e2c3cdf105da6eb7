package engine

import (
	"cmp"
	"context"
	"time"

	"github.com/wfhq/wf/engine/signalbus"
)

// waitBatch is how many runs one wait pass takes at most.
const waitBatch = 500

// runWaits is the wait pass of the engine's workflows
// (workflow.Workflows.Wake): it ends the sleeps whose time came, the waits
// that timed out and the waits an emitted event matched. It polls no
// waiting step: it runs when the next wake time comes (read from the wake
// index by the pass before), when an event is emitted (the leader's
// NOTIFY on the events channel, through the bus; a follower's probe that
// finds events due) and on the leader's sweep each poll interval, which
// picks up the waits other transactions started since; at least every
// janitor interval otherwise (a follower). Each pass is one statement while
// nothing is due, however many steps wait.
func (e *Engine) runWaits(ctx context.Context) error {
	w := signalbus.NewWaker()
	unsub := e.bus.Subscribe(signalbus.EventQueued, func(string) { w.Wake() })
	defer unsub()
	fallback := cmp.Or(e.cfg.JanitorInterval, 30*time.Second)
	for ctx.Err() == nil {
		res, err := e.Workflows().Wake(ctx, e.store, waitBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			e.cfg.Logger.Warn("workflow waits", "error", err)
		case res.Woken > 0:
			e.cfg.Logger.Info("workflow steps woke", "steps", res.Woken)
		}
		if err == nil && res.More {
			continue
		}
		wait := fallback
		if res.Next != nil {
			wait = min(wait, max(res.Next.Sub(e.cfg.Clock.Now()), 0))
		}
		timer := e.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-w.C():
		case <-timer.C():
		}
		timer.Stop()
	}
	return nil
}
