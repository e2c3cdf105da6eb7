package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/egress"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// eventSpecs loads the shipped specs/events.yaml, whose task types the
// webhook handlers serve.
func eventSpecs(t *testing.T) *spec.Set {
	t.Helper()
	set, err := spec.Load(spec.Options{Builtins: webhooks.Names()}, "../../specs/events.yaml")
	require.NoError(t, err)
	return set
}

func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cr3t-s3cr3t-s3cr3t")
	body := []byte(`{"event_id":"e1"}`)
	now := time.Unix(1_800_000_000, 0)
	ts := "1800000000"
	sig := webhooks.Sign(secret, ts, body)
	// Independent of the implementation: printf '1800000000.{"event_id":"e1"}' | openssl dgst -sha256 -hmac s3cr3t-s3cr3t-s3cr3t
	require.Equal(t, "sha256=79f7f140b0b6d82e9b4db5bd1f9c0f3dafdcb7451fd1659a69480f65a119dba1", sig)
	require.NoError(t, webhooks.Verify(secret, ts, sig, body, now.Add(time.Minute), webhooks.DefaultTolerance))
	for name, err := range map[string]error{
		"other body":   webhooks.Verify(secret, ts, sig, []byte(`{"event_id":"e2"}`), now, webhooks.DefaultTolerance),
		"other secret": webhooks.Verify([]byte("other"), ts, sig, body, now, webhooks.DefaultTolerance),
		"replayed":     webhooks.Verify(secret, ts, sig, body, now.Add(time.Hour), webhooks.DefaultTolerance),
		"no prefix":    webhooks.Verify(secret, ts, sig[7:], body, now, webhooks.DefaultTolerance),
		"bad ts":       webhooks.Verify(secret, "yesterday", sig, body, now, webhooks.DefaultTolerance),
	} {
		require.ErrorIs(t, err, webhooks.ErrBadSignature, name)
	}
	require.Equal(t, webhooks.Fingerprint("a"), webhooks.Fingerprint("a"))
	require.NotContains(t, webhooks.Fingerprint("s3cr3t-s3cr3t-s3cr3t"), "s3cr3t")
}

// receiver is an httptest server that verifies each delivery and answers
// from a script of status codes (the last one repeats).
type receiver struct {
	*httptest.Server
	secret string
	codes  []int

	mu     sync.Mutex
	calls  int
	valid  int
	events []string
}

func newReceiver(t *testing.T, secret string, codes ...int) *receiver {
	r := &receiver{secret: secret, codes: codes}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		err := webhooks.Verify([]byte(r.secret), req.Header.Get(webhooks.HeaderTimestamp), req.Header.Get(webhooks.HeaderSignature),
			body, clock.Now(), webhooks.DefaultTolerance)
		r.mu.Lock()
		code := r.codes[min(r.calls, len(r.codes)-1)]
		r.calls++
		if err == nil {
			r.valid++
			var ev webhooks.Event
			if json.Unmarshal(body, &ev) == nil && ev.EventID == req.Header.Get(webhooks.HeaderEventID) {
				r.events = append(r.events, ev.EventType)
			}
		} else {
			code = http.StatusUnauthorized
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) counts() (calls, valid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, r.valid
}

type bundle struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	store *store.Store
}

// startEngine runs one wf instance on the shipped specs/events.yaml with the
// event consumer and the webhook handlers, as `wf run` wires them; only the
// delivery backoff is shortened.
func startEngine(t *testing.T) *bundle {
	t.Helper()
	set := eventSpecs(t)
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	cl := client.New(st, set)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	reg := builtin.NewRegistry()
	hooks, err := webhooks.New(webhooks.Deps{Store: st, Client: cl, Logger: quiet, HTTP: loopbackHTTP(t)})
	require.NoError(t, err)
	require.NoError(t, hooks.Register(reg))
	rs, err := runnerset.Build(set, runnerset.Options{Registry: reg, DefaultVisibilityTimeout: time.Minute, Logger: quiet})
	require.NoError(t, err)
	for pair, rule := range rs.Rules {
		if pair.TaskType == webhooks.TaskTypeWebhookDelivery {
			rule.Backoff = func(int) time.Duration { return 10 * time.Millisecond }
			rs.Rules[pair] = rule
		}
	}
	cons, err := events.NewConsumer(events.ConsumerConfig{Store: st, Client: cl, Specs: set, Owner: "t1", Interval: 100 * time.Millisecond, Logger: quiet})
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{
		Name: "wh", Owner: "t1", Pool: pool, Runners: rs.Runners, Pairs: rs.Pairs, Rules: rs.Rules,
		PollInterval: 50 * time.Millisecond, Services: []engine.Service{{Name: "event consumer", Run: func(ctx context.Context) error { cons.Run(ctx, nil); return nil }}}, Logger: quiet,
	})
	require.NoError(t, err)
	inproc.Go(t, eng.Run)
	return &bundle{ctx: context.Background(), pool: pool, store: st}
}

func (b *bundle) subscribe(t *testing.T, r *receiver, eventTypes ...string) uuid.UUID {
	t.Helper()
	s, err := b.store.InsertWebhookSubscriber(b.ctx, store.NewWebhookSubscriber{URL: r.URL + "/hook", Secret: r.secret, EventTypes: eventTypes})
	require.NoError(t, err)
	return s.ID
}

func (b *bundle) delivery(t *testing.T, subscriber uuid.UUID) wftype.Task {
	t.Helper()
	tasks, err := b.store.ListTasks(b.ctx, store.TaskFilter{TaskTypes: []string{webhooks.TaskTypeWebhookDelivery}, Limit: 100})
	require.NoError(t, err)
	for _, task := range tasks {
		var in struct {
			SubscriberID string `json:"subscriber_id"`
		}
		require.NoError(t, json.Unmarshal(task.Inputs, &in))
		if in.SubscriberID == subscriber.String() {
			return task
		}
	}
	return wftype.Task{}
}

// TestWebhookDeliveries: one catalog.deleted event reaches, through the
// consumer, event_dispatch and webhook_delivery: a receiver that verifies
// the signature (once), one that answers 500 then 200 (twice, then
// COMPLETED), one that always fails (DEAD_LETTER after its retries), one
// that answers 400 (FAILED at once), and none of the subscribers of other
// event types.
func TestWebhookDeliveries(t *testing.T) {
	t.Parallel()
	b := startEngine(t)
	ok := newReceiver(t, "secret-of-the-good-receiver", 200)
	flaky := newReceiver(t, "secret-of-the-flaky-receiver", 500, 200)
	dead := newReceiver(t, "secret-of-the-dead-receiver", 503)
	bad := newReceiver(t, "secret-of-the-picky-receiver", 400)
	other := newReceiver(t, "secret-of-the-other-receiver", 200)
	okID := b.subscribe(t, ok, "catalog.*")
	flakyID := b.subscribe(t, flaky, "catalog.deleted")
	deadID := b.subscribe(t, dead, "catalog.deleted", "catalog.created")
	badID := b.subscribe(t, bad, "catalog.*")
	b.subscribe(t, other, "collection.*")

	// The registry records a deletion in the transaction that emits its
	// catalog.deleted; the fan-out checks the record.
	_, err := b.pool.Exec(b.ctx, `INSERT INTO catalog.deletions (catalog_id, schema_name) VALUES ('a', 'cat_a')`)
	require.NoError(t, err)
	em := events.NewEmitter(b.store)
	res, err := em.Emit(b.ctx, events.Event{Type: "catalog.deleted", Scope: events.ScopeCatalog, SchemaName: "cat_a",
		Payload: json.RawMessage(`{"catalog_id": "a"}`)})
	require.NoError(t, err)
	// One the registry has no record of (written to the outbox by other
	// means) reaches no subscriber.
	forged, err := em.Emit(b.ctx, events.Event{Type: "catalog.deleted", Scope: events.ScopeCatalog, SchemaName: "cat_b",
		Payload: json.RawMessage(`{"catalog_id": "b"}`)})
	require.NoError(t, err)

	status := func(id uuid.UUID) wftype.TaskStatus { return b.delivery(t, id).Status }
	require.Eventually(t, func() bool {
		return status(okID) == wftype.StatusCompleted && status(flakyID) == wftype.StatusCompleted &&
			status(deadID) == wftype.StatusDeadLetter && status(badID) == wftype.StatusFailed
	}, 30*time.Second, 20*time.Millisecond)

	calls, valid := ok.counts()
	require.Equal(t, 1, calls)
	require.Equal(t, 1, valid)
	require.Equal(t, []string{"catalog.deleted"}, ok.events)
	calls, valid = flaky.counts()
	require.Equal(t, 2, calls)
	require.Equal(t, 2, valid)
	deadTask := b.delivery(t, deadID)
	calls, _ = dead.counts()
	require.Equal(t, deadTask.MaxRetries+1, calls, "every attempt reached the receiver")
	require.Equal(t, deadTask.MaxRetries, deadTask.RetryCount)
	require.Contains(t, *deadTask.Error, "503")
	badTask := b.delivery(t, badID)
	require.Equal(t, 1, badTask.Attempts)
	require.Contains(t, *badTask.Error, "400")
	calls, _ = other.counts()
	require.Zero(t, calls)

	// One event_dispatch task per event: the recorded one fanned out to
	// four, the forged one refused for good, sending nothing.
	dispatch := catalogtest.WaitEnded(t, b.store, webhooks.NameEventDispatch, 2)
	byKey := map[string]wftype.Task{}
	for _, d := range dispatch {
		byKey[*d.DedupKey] = d
	}
	recorded, fake := byKey["evt:"+res.Event.ID.String()+":event_dispatch"], byKey["evt:"+forged.Event.ID.String()+":event_dispatch"]
	require.Equal(t, wftype.StatusCompleted, recorded.Status)
	var out map[string]any
	require.NoError(t, json.Unmarshal(recorded.Outputs, &out))
	require.EqualValues(t, 4, out["created"])
	require.Equal(t, wftype.StatusFailed, fake.Status)
	require.Contains(t, *fake.Error, `the registry has no record of the deletion of catalog "b"`)
	calls, _ = ok.counts()
	require.Equal(t, 1, calls, "the forged event reached no one")
}

// TestDeliverClassifiesAnswers calls the delivery handler directly: which
// answers are retried and which fail for good.
func TestDeliverClassifiesAnswers(t *testing.T) {
	t.Parallel()
	set := eventSpecs(t)
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	task := func(sub uuid.UUID) *wftype.Task {
		id, _, err := store.NewID()
		require.NoError(t, err)
		in, _ := json.Marshal(map[string]any{"subscriber_id": sub.String(), "event_id": "e1", "event_type": "catalog.created", "payload": map[string]any{}})
		return &wftype.Task{ID: id, Inputs: in, Attempts: 1}
	}
	_, err := webhooks.New(webhooks.Deps{Store: st})
	require.ErrorContains(t, err, "Store and Client are required", "a missing dependency fails at start-up, not at a run")
	ctx := context.Background()
	// By default a receiver on loopback is refused, with the words of a
	// closed port, and retried.
	strict, err := webhooks.New(webhooks.Deps{Store: st, Client: client.New(st, set)})
	require.NoError(t, err)
	lo := newReceiver(t, "0123456789abcdef", 204)
	los, err := st.InsertWebhookSubscriber(context.Background(), store.NewWebhookSubscriber{URL: lo.URL, Secret: lo.secret, EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)
	_, err = strict.Deliver(ctx, task(los.ID), nil)
	require.ErrorIs(t, err, egress.ErrUnreachable)
	require.False(t, wftype.IsPermanent(err))

	h, err := webhooks.New(webhooks.Deps{Store: st, Client: client.New(st, set), HTTP: loopbackHTTP(t)})
	require.NoError(t, err)

	for code, permanent := range map[int]bool{200: false, 204: false, 301: true, 400: true, 404: true, 408: false, 429: false, 500: false, 503: false} {
		r := newReceiver(t, "0123456789abcdef", code)
		s, err := st.InsertWebhookSubscriber(context.Background(), store.NewWebhookSubscriber{URL: r.URL, Secret: r.secret, EventTypes: []string{"catalog.*"}})
		require.NoError(t, err)
		out, err := h.Deliver(ctx, task(s.ID), nil)
		if code < 300 {
			require.NoError(t, err, code)
			require.Contains(t, string(out), `"status_code":`)
			continue
		}
		require.Error(t, err, code)
		require.Equal(t, permanent, wftype.IsPermanent(err), "%d: %v", code, err)
		require.NotContains(t, err.Error(), r.URL, "the URL may hold credentials")
	}
	// A removed subscriber fails for good.
	_, err = h.Deliver(ctx, task(uuid.New()), nil)
	require.True(t, wftype.IsPermanent(err))
	require.ErrorContains(t, err, "was removed")
}

// loopbackHTTP is an outbound client that reaches the tests' receivers on
// loopback, allow-listed as outbound.allow does.
func loopbackHTTP(t *testing.T) *http.Client {
	p, err := egress.NewPolicy([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	return p.Client(webhooks.DefaultRequestTimeout)
}
