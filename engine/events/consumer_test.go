package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/leader"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// consumerTypes are the task types of consumerSpecs, without its
// subscriptions (an instance on the specs of before they were added).
const consumerTypes = `kind: TaskType
name: on_item
description: Created for every stream event.
handler: {builtin: noop}
inputs:
  type: object
  required: [n]
  properties:
    n: {type: integer}
---
kind: TaskType
name: audit
description: Created for even stream items only.
handler: {builtin: noop}
`

const consumerSpecs = consumerTypes + `---
kind: Subscription
name: items
event_type: "stream.*"
task_type: on_item
inputs:
  n: int(event.payload.n)
---
kind: Subscription
name: even-items
event_type: stream.item
when: int(event.payload.n) % 2 == 0
task_type: audit
`

type bundle struct {
	ctx     context.Context
	url     string // the test's database
	store   *store.Store
	specs   *spec.Set
	client  *client.Client
	emitter *events.Emitter
}

func setup(t *testing.T, specYAML string) *bundle {
	t.Helper()
	set, err := spec.Compile([]spec.Source{{Name: "test.yaml", Data: []byte(specYAML)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	url := dbtest.NewDatabase(t)
	st := store.New(dbtest.PoolFor(t, url))
	return &bundle{ctx: context.Background(), url: url, store: st, specs: set, client: client.New(st, set), emitter: events.NewEmitter(st)}
}

func (b *bundle) consumer(t *testing.T, owner string, clk clock.Clock, tweak func(*events.ConsumerConfig)) *events.Consumer {
	t.Helper()
	cfg := events.ConsumerConfig{
		Store: b.store, Client: b.client, Specs: b.specs, Owner: owner, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := events.NewConsumer(cfg)
	require.NoError(t, err)
	return c
}

func (b *bundle) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.DB().QueryRow(b.ctx, q, args...).Scan(&n))
	return n
}

func (b *bundle) emitItems(t *testing.T, from, n int) []events.Result {
	t.Helper()
	evs := make([]events.Event, n)
	for i := range evs {
		evs[i] = events.Event{Type: "stream.item", Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, from+i))}
	}
	res, err := b.emitter.EmitMany(b.ctx, evs)
	require.NoError(t, err)
	return res
}

// TestThreeConsumersTenThousandEvents: three consumers share one stream of
// 10,000 events while a fourth "crashes" holding a batch; every subscribed
// task is created exactly once, and the crashed batch comes back after its
// lease.
func TestThreeConsumersTenThousandEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	const total = 10_000
	b.emitItems(t, 0, total)

	// A consumer that claims a batch and dies before processing it.
	crashed, err := b.store.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "crashed", Limit: 100, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, crashed, 100)

	// No bus: the consumers poll every Interval, and so take the crashed
	// batch back once its lease ends.
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 3 {
		c := b.consumer(t, fmt.Sprintf("c%d", i), clock.Real{}, func(cfg *events.ConsumerConfig) { cfg.Interval = 100 * time.Millisecond })
		wg.Add(1)
		go func() { defer wg.Done(); c.Run(ctx, nil) }()
	}
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM tasks.events`) == 0
	}, 90*time.Second, 20*time.Millisecond)
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	t.Logf("3 consumers: %d events (%d tasks) in %v", total, total+total/2, elapsed)

	require.Equal(t, total, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'on_item'`))
	require.Equal(t, total/2, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'audit'`))
	// Exactly once per (event, task type), and each on_item task got its n.
	require.Zero(t, b.count(t, `SELECT count(*) FROM (SELECT dedup_key FROM tasks.tasks GROUP BY dedup_key HAVING count(*) > 1) d`))
	// Per event: one on_item task for each of the 10,000 events.
	require.Equal(t, total, b.count(t, `SELECT count(DISTINCT split_part(dedup_key, ':', 2)) FROM tasks.tasks WHERE task_type = 'on_item'`))
	require.Equal(t, total, b.count(t, `SELECT count(DISTINCT (inputs->>'n')::int) FROM tasks.tasks WHERE task_type = 'on_item'`))
	require.Equal(t, total+total/2, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE dedup_key LIKE 'evt:%'`))
}

// TestFailingEventDeadLetters: an event whose subscription expression fails
// at run time is retried with backoff and is DEAD_LETTER after 5 attempts,
// with the reason; the good event of its batch is consumed at once.
func TestFailingEventDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	fake := clock.NewFake(clock.Now().Add(time.Minute))
	c := b.consumer(t, "c1", fake, nil)

	bad, err := b.emitter.Emit(b.ctx, events.Event{Type: "stream.item", Payload: json.RawMessage(`{"n": "not a number"}`), DedupKey: "bad-1"})
	require.NoError(t, err)
	b.emitItems(t, 1, 1)

	res, err := c.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, events.ConsumerResult{Claimed: 2, Consumed: 1, Tasks: 1, Retried: 1}, res)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.tasks`))

	for attempt := 2; attempt <= 5; attempt++ {
		// Not due before its backoff.
		res, err := c.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Zero(t, res.Claimed, "attempt %d", attempt)
		fake.Advance(events.DefaultEventBackoff(attempt - 1))
		res, err = c.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, res.Claimed, "attempt %d", attempt)
		if attempt < 5 {
			require.Equal(t, 1, res.Retried)
		} else {
			require.Equal(t, 1, res.DeadLettered)
		}
	}
	ev, err := b.store.GetEvent(b.ctx, bad.Event.ID)
	require.NoError(t, err)
	require.Equal(t, store.EventDeadLetter, ev.Status)
	require.Equal(t, 5, ev.Attempts)
	require.NotNil(t, ev.DeadLetteredAt)
	require.Contains(t, *ev.Error, "attempt 5 of 5")
	require.Contains(t, *ev.Error, "int(not a number)")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.tasks`))
	// The dead letter released its dedup key: the same event may be emitted again.
	again, err := b.emitter.Emit(b.ctx, events.Event{Type: "stream.item", Payload: json.RawMessage(`{"n": 7}`), DedupKey: "bad-1"})
	require.NoError(t, err)
	require.False(t, again.Duplicate)

	listed, err := b.store.ListEvents(b.ctx, store.EventFilter{Statuses: []string{store.EventDeadLetter}})
	require.NoError(t, err)
	require.Len(t, listed, 1)
	require.Equal(t, bad.Event.ID, listed[0].ID)
}

// TestExpiredLeaseComesBack: events held by a consumer that stopped are
// taken back after their lease, and the late owner can no longer settle them.
func TestExpiredLeaseComesBack(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	fake := clock.NewFake(clock.Now().Add(time.Minute))
	b.emitItems(t, 0, 3)
	held, err := b.store.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "dead", Limit: 10, Lease: time.Minute, Now: fake.DBNow()})
	require.NoError(t, err)
	require.Len(t, held, 3)

	c := b.consumer(t, "c1", fake, nil)
	res, err := c.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Zero(t, res.Claimed)

	fake.Advance(2 * time.Minute)
	res, err = c.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, events.ConsumerResult{Claimed: 3, Consumed: 3, Tasks: 5, Recovered: 3}, res)

	// The late owner finds nothing left to acknowledge.
	keys := []store.EventKey{{ID: held[0].ID, CreatedAt: held[0].CreatedAt}}
	acked, err := b.store.AckEvents(b.ctx, "dead", keys)
	require.NoError(t, err)
	require.Empty(t, acked)
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM tasks.tasks`))
}

// TestUnknownTaskTypeFailsOnlyItsEvent: a subscription whose task type the
// client does not know (a spec set that changed between instances) fails its
// event, not the batch.
func TestUnknownTaskTypeFailsOnlyItsEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	// The client knows only on_item: audit tasks are unknown to it.
	narrow, err := spec.Compile([]spec.Source{{Name: "narrow.yaml", Data: []byte(`kind: TaskType
name: on_item
handler: {builtin: noop}
`)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	b.client = client.New(b.store, narrow)
	fake := clock.NewFake(clock.Now().Add(time.Minute))
	c := b.consumer(t, "c1", fake, nil)
	b.emitItems(t, 1, 2) // n=1 (odd: no audit task), n=2 (even: audit)

	res, err := c.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, events.ConsumerResult{Claimed: 2, Consumed: 1, Tasks: 1, Retried: 1}, res)
	failed, err := b.store.ListEvents(b.ctx, store.EventFilter{})
	require.NoError(t, err)
	require.Len(t, failed, 1)
	require.Contains(t, *failed[0].Error, "unknown task type")
}

// TestSignalledConsumerTakesBackEveryExpiredLease: a consumer on a bus
// takes back expired leases at most once an Interval, but when one take-back
// fills a batch it takes back the rest at once: 250 events of a crashed
// consumer (batch 100) are all consumed after one signal, with no tick.
func TestSignalledConsumerTakesBackEveryExpiredLease(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	const total = 250
	b.emitItems(t, 0, total)
	fake := clock.NewFake(clock.Now())
	for range 3 {
		_, err := b.store.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "crashed", Limit: 100, Lease: time.Second, Now: fake.DBNow()})
		require.NoError(t, err)
	}
	require.Equal(t, total, b.count(t, `SELECT count(*) FROM tasks.events WHERE status = 'PROCESSING'`))
	fake.Advance(time.Minute) // every lease has ended

	c := b.consumer(t, "c1", fake, func(cfg *events.ConsumerConfig) { cfg.Interval = time.Hour })
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, signalbus.New()) }() // a bus nobody publishes on: only the first wake
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM tasks.events`) == 0
	}, 90*time.Second, 20*time.Millisecond, "expired leases left behind")
	require.Equal(t, total, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'on_item'`))
}

// readsClock is a Fake that reports the time of each DBNow on reads: a
// test knows when a consumer has read the time of a pass (the time its
// claim reads due events at).
type readsClock struct {
	*clock.Fake
	reads chan time.Time
}

// DBNow implements clock.Clock.
func (c readsClock) DBNow() *time.Time {
	now := c.Fake.DBNow()
	select {
	case c.reads <- *now:
	default: // nobody is counting
	}
	return now
}

// TestRetriedEventConsumedUnderTaskTraffic: an event whose retry delay
// ended is consumed at the leader's next sweep though task notifications
// come more often than its poll interval. Nothing announces such an event:
// with a bus the consumer runs only on EventQueued signals, and the leader
// sent none under steady task traffic (its wait for notifications began
// anew at each one, so its sweep never came). The leader and the consumer
// share a fake clock: each step moves it a third of the poll interval and
// sends a task notification, which the leader forwards before the next.
func TestRetriedEventConsumedUnderTaskTraffic(t *testing.T) {
	t.Parallel()
	b := setup(t, consumerSpecs)
	fake := clock.NewFake(clock.Now().Add(time.Minute))
	const poll = time.Minute

	// The event fails once (a client that does not know audit) and waits
	// for its retry delay, a second, before any leader listens.
	emitted := b.emitItems(t, 2, 1)
	narrow, err := spec.Compile([]spec.Source{{Name: "narrow.yaml", Data: []byte(`kind: TaskType
name: on_item
handler: {builtin: noop}
`)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	failing := *b
	failing.client = client.New(b.store, narrow)
	res, err := failing.consumer(t, "c0", fake, nil).RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Retried)

	bus := signalbus.New()
	sweeps := make(chan struct{}, 16)
	forwarded := make(chan string, 16)
	bus.Subscribe(signalbus.EventQueued, func(p string) {
		if p == "" {
			select {
			case sweeps <- struct{}{}:
			default: // the test has failed already
			}
		}
	})
	bus.Subscribe(signalbus.TaskQueued, func(p string) {
		if p != "" {
			select {
			case forwarded <- p:
			default: // the test has failed already
			}
		}
	})
	cc, err := pgx.ParseConfig(b.url)
	require.NoError(t, err)
	elector, err := leader.New(leader.Config{
		Name: "svc", ConnConfig: cc, Owner: "solo", PollInterval: poll, Clock: fake, Bus: bus,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); elector.Run(ctx) }()
	select {
	case <-sweeps: // its sweep ticker runs from then on
	case <-time.After(30 * time.Second):
		t.Fatal("no sweep when elected")
	}

	// The consumer's first pass, on its own wake-up, reads the time before
	// the clock moves: the event is not due then. It then waits for a signal.
	clk := readsClock{Fake: fake, reads: make(chan time.Time, 16)}
	c := b.consumer(t, "c1", clk, nil)
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx, bus) }()
	select {
	case <-clk.reads:
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer did not start")
	}

	conn, err := pgx.Connect(b.ctx, b.url)
	require.NoError(t, err)
	defer conn.Close(b.ctx)
	for step := range 3 {
		fake.Advance(poll / 3)
		_, err = conn.Exec(b.ctx, `SELECT pg_notify('new_task_queued', 'noop')`)
		require.NoError(t, err)
		select {
		case <-forwarded:
		case <-time.After(30 * time.Second):
			t.Fatalf("step %d: the notification was not forwarded", step)
		}
	}
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM tasks.events WHERE event_id = $1`, emitted[0].Event.ID) == 0
	}, 30*time.Second, 10*time.Millisecond, "the event whose retry delay ended was not consumed")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'audit'`))
}
