package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
)

// ServedAppNamePrefix starts the application_name of the connection on
// which an instance holds the locks of the task types it serves
// ("wf-serves:<service>:<owner>", see store/served.go) and listens for
// reload requests (store.ReloadChannel).
const ServedAppNamePrefix = "wf-serves:"

// servedPing is how often the served-types connection is checked when
// nothing happens on it (wall time), and how long it waits before it
// connects again after a failure.
const servedPing = 10 * time.Second

// servedState is what the served-types connection holds now: the task
// types whose locks it holds, and a channel closed when that changes.
type servedState struct {
	held    []string
	changed chan struct{}
}

// setServed records the task types whose locks are held now.
func (e *Engine) setServed(held []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.served.held = held
	if e.served.changed != nil {
		close(e.served.changed)
	}
	e.served.changed = make(chan struct{})
}

// waitServed waits until the served-types connection holds the locks of
// exactly the task types the dispatcher claims, or ctx ends.
func (e *Engine) waitServed(ctx context.Context) error {
	for {
		want := e.dispatcher.TaskTypes()
		e.mu.Lock()
		held, changed := e.served.held, e.served.changed
		if changed == nil {
			e.served.changed = make(chan struct{})
			changed = e.served.changed
		}
		e.mu.Unlock()
		if slices.Equal(held, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// runServed holds, until ctx ends, the connection that says which task
// types this instance serves and on which reload requests arrive; after a
// failure it connects again, logging the first failure of a series and
// then at most every failureLogEvery.
func (e *Engine) runServed(ctx context.Context) error {
	cc := cmp.Or(e.cfg.SessionConnConfig, e.cfg.Pool.Config().ConnConfig).Copy()
	// Named once it holds its locks (holdServed): a served-types connection
	// seen without them would say this instance serves nothing.
	cc.RuntimeParams["application_name"] = "wf-starting"
	var failures int
	var lastLogged time.Time
	for ctx.Err() == nil {
		err := e.holdServed(ctx, cc)
		if ctx.Err() != nil {
			break
		}
		if failures++; failures == 1 || time.Since(lastLogged) >= failureLogEvery {
			e.cfg.Logger.Warn("served task types: connection lost, retrying", "err", err, "failures", failures)
			lastLogged = time.Now()
		}
		_ = clock.Sleep(ctx, clock.Real{}, min(servedPing, e.cfg.PollInterval*time.Duration(min(failures, 10))))
	}
	return nil
}

// failureLogEvery spaces the warnings of a series of connection failures.
const failureLogEvery = 30 * time.Second

// holdServed connects, listens for reload requests and holds the locks of
// the task types the dispatcher claims, changing them at each reload, until
// ctx ends (nil) or the connection fails.
func (e *Engine) holdServed(ctx context.Context, cc *pgx.ConnConfig) error {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return err
	}
	defer func() {
		e.setServed(nil)
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = conn.Close(closeCtx)
		cancel()
	}()
	st := store.New(conn)
	if err := st.Listen(ctx, store.ReloadChannel); err != nil {
		return err
	}
	var held []string
	for named := false; ; named = true {
		reloaded := e.Reloaded()
		if want := e.dispatcher.TaskTypes(); !slices.Equal(held, want) {
			if err := st.HoldServedTypes(ctx, minus(want, held), minus(held, want)); err != nil {
				return err
			}
			held = want
		}
		if !named {
			if err := st.SetApplicationName(ctx, ServedAppNamePrefix+e.cfg.Name+":"+e.cfg.Owner); err != nil {
				return err
			}
		}
		e.setServed(held)
		wctx, cancel := context.WithTimeout(ctx, servedPing)
		go func() {
			select {
			case <-reloaded:
				cancel()
			case <-wctx.Done():
			}
		}()
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			e.onReloadNotice(n.Payload)
		case conn.IsClosed():
			return err
		default: // a reload, or nothing for servedPing: check the connection
			if err := conn.Ping(ctx); err != nil {
				return err
			}
		}
	}
}

// minus returns the elements of a not in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// onReloadNotice queues a reload request of this instance's service for
// runReloadRequests; replies and other services' requests are ignored.
func (e *Engine) onReloadNotice(payload string) {
	rest, ok := strings.CutPrefix(payload, "request:")
	if !ok {
		return
	}
	id, service, ok := strings.Cut(rest, ":")
	if !ok || service != e.cfg.Name {
		return
	}
	select {
	case e.reloadRequests <- id:
	default: // a burst: the reloads queued already read the same files
	}
}

// runReloadRequests reloads the specs (ReloadSpecs) for each request
// `wf reload` sent, and answers it with the outcome, until ctx ends.
func (e *Engine) runReloadRequests(ctx context.Context) error {
	for {
		var id string
		select {
		case <-ctx.Done():
			return nil
		case id = <-e.reloadRequests:
		}
		res, err := e.ReloadSpecs(ctx)
		msg := strings.Join(res.TaskTypes, ",")
		if err != nil { // one line: `wf reload` prints one per instance
			msg = strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
		}
		if rerr := e.store.ReplyReload(ctx, id, e.cfg.Owner, err == nil, msg); rerr != nil && ctx.Err() == nil {
			e.cfg.Logger.Warn("could not answer a reload request", "err", rerr)
		}
	}
}

// ReloadSpecs loads the specs again from Config.SpecSource and Reloads
// them; a set that does not load or build is logged, with every error and
// its file:line:column, and the old set keeps running. On success it
// returns once the served-types connection states the new task types (at
// most a few seconds), so that what it reports is what other instances
// and `wf enqueue` see.
func (e *Engine) ReloadSpecs(ctx context.Context) (ReloadResult, error) {
	if e.cfg.SpecSource == nil {
		return ReloadResult{}, errors.New("error reloading the specs: this instance has no spec source to read them from")
	}
	set, err := e.cfg.SpecSource()
	if err == nil {
		var res ReloadResult
		if res, err = e.Reload(ctx, set); err == nil {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if werr := e.waitServed(wctx); werr != nil && ctx.Err() == nil {
				e.cfg.Logger.Warn("specs reloaded; the served task types are not stated yet", "err", werr)
			}
			return res, nil
		}
	}
	e.cfg.Logger.Error("specs not reloaded: the old specs keep running", "err", err)
	return ReloadResult{}, err
}
