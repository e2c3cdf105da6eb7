package webhooks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/propagation"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/egress"
	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// Names of the builtin handlers, and of the delivery task type that
// event_dispatch creates (specs/events.yaml declares both task types).
const (
	NameEventDispatch       = "event_dispatch"
	NameWebhookDelivery     = "webhook_delivery"
	TaskTypeWebhookDelivery = "webhook_delivery"
)

// DefaultRequestTimeout bounds one POST when Deps.HTTP is nil; the task
// type's run timeout bounds it too.
const DefaultRequestTimeout = 30 * time.Second

// Deps are what the handlers need; New binds them when the engine is built.
type Deps struct {
	// Store reads the subscribers.
	Store *store.Store
	// Client creates webhook_delivery tasks; its spec set must declare them.
	Client *client.Client
	// HTTP posts deliveries. Default: DefaultRequestTimeout, redirects not
	// followed.
	HTTP   *http.Client
	Clock  clock.Clock
	Logger *slog.Logger
}

// Names lists the handler names Register adds (spec validation needs only
// the names).
func Names() []string { return []string{NameEventDispatch, NameWebhookDelivery} }

// Handlers are the two handlers, bound to their dependencies.
type Handlers struct {
	d Deps
}

// New checks d, fills its defaults and binds the handlers to it; a missing
// dependency is an error here, at start-up, never at a task's run.
func New(d Deps) (*Handlers, error) {
	if d.Store == nil || d.Client == nil {
		return nil, errors.New("error configuring webhook handlers: Store and Client are required")
	}
	if d.HTTP == nil {
		// Receivers on loopback, private, link-local and other
		// special-purpose addresses are refused (outbound.allow opens them).
		strict, err := egress.NewPolicy(nil)
		if err != nil {
			return nil, fmt.Errorf("error configuring webhook handlers: %w", err)
		}
		d.HTTP = strict.Client(DefaultRequestTimeout)
	}
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	d.Logger = cmp.Or(d.Logger, slog.Default())
	return &Handlers{d: d}, nil
}

// Register adds both handlers to reg. A name reg already holds keeps its
// handler (an embedding program may bring its own) and is reported in the
// error; the other name is registered all the same.
func (h *Handlers) Register(reg *builtin.Registry) error {
	return errors.Join(reg.Register(NameEventDispatch, h.Dispatch), reg.Register(NameWebhookDelivery, h.Deliver))
}

// Event is an event as the webhook task types carry it in their inputs, and
// the body of a delivery.
type Event struct {
	EventID    string          `json:"event_id"`
	EventType  string          `json:"event_type"`
	Scope      string          `json:"scope,omitempty"`
	SchemaName string          `json:"schema_name,omitempty"`
	CreatedAt  string          `json:"created_at,omitempty"`
	Payload    json.RawMessage `json:"payload"`
}

// deliveryInputs are the inputs of a webhook_delivery task.
type deliveryInputs struct {
	SubscriberID string `json:"subscriber_id"`
	Event
}

func decodeInputs(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return wftype.Permanent(fmt.Errorf("error reading inputs: %w", err))
	}
	return nil
}

// matches reports whether a subscriber's event types cover eventType.
func matches(patterns []string, eventType string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, eventType); err == nil && ok {
			return true
		}
	}
	return false
}

// Dispatch is the event_dispatch handler: one webhook_delivery task per
// subscriber of the event's type, created in one statement and deduplicated
// per event and subscriber (the delivery type's dedup key). A
// catalog.deleted the registry did not record is sent to no one (confirm).
func (h *Handlers) Dispatch(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	d := &h.d
	var ev Event
	if err := decodeInputs(task.Inputs, &ev); err != nil {
		return nil, err
	}
	if ev.EventID == "" || ev.EventType == "" {
		return nil, wftype.Permanent(errors.New("error reading inputs: event_id and event_type are required"))
	}
	if len(ev.Payload) == 0 {
		ev.Payload = json.RawMessage(`{}`)
	}
	if err := h.confirm(ctx, ev); err != nil {
		return nil, err
	}
	subs, err := d.Store.ListWebhookSubscribers(ctx)
	if err != nil {
		return nil, err
	}
	var reqs []client.Request
	var ids, skipped []string
	for _, s := range subs {
		if !matches(s.EventTypes, ev.EventType) {
			continue
		}
		if s.Unreadable != nil {
			// wf cannot sign for it (its key is not configured): skipped,
			// loudly, so the others are not held up by it
			// (wf_webhook_secrets_unreadable counts these).
			d.Logger.Error("webhook subscriber skipped: its secret cannot be decrypted", "subscriber_id", s.ID.String(),
				"event_id", ev.EventID, "event_type", ev.EventType, "err", s.Unreadable)
			skipped = append(skipped, s.ID.String())
			continue
		}
		inputs, err := json.Marshal(deliveryInputs{SubscriberID: s.ID.String(), Event: ev})
		if err != nil {
			return nil, fmt.Errorf("error encoding delivery inputs: %w", err)
		}
		reqs = append(reqs, client.Request{TaskType: TaskTypeWebhookDelivery, SchemaName: wftype.SystemSchema, Inputs: inputs})
		ids = append(ids, s.ID.String())
	}
	out := map[string]any{"event_id": ev.EventID, "subscribers": len(reqs), "created": 0, "deduplicated": 0}
	if len(skipped) > 0 {
		out["skipped_subscriber_ids"] = skipped
	}
	if len(reqs) > 0 {
		res, err := d.Client.EnqueueMany(ctx, reqs)
		if err != nil {
			return nil, fmt.Errorf("error creating webhook deliveries: %w", err)
		}
		created := 0
		for _, r := range res {
			if !r.Duplicate {
				created++
			}
		}
		out["created"], out["deduplicated"], out["subscriber_ids"] = created, len(res)-created, ids
	}
	return json.Marshal(out)
}

// confirm checks a lifecycle event that announces a destruction against
// the registry before it is signed and sent to every subscriber: a
// catalog.deleted is fanned out only when the registry recorded that
// catalog's deletion with the event's tenant, so one written to the outbox
// by other means (a forged event, or a program's own emit) reaches no
// receiver. The refusal is permanent.
func (h *Handlers) confirm(ctx context.Context, ev Event) error {
	if ev.EventType != registry.EventCatalogDeleted {
		return nil
	}
	var p struct {
		CatalogID  string `json:"catalog_id"`
		SchemaName string `json:"schema_name"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil || p.CatalogID == "" || (p.SchemaName != "" && p.SchemaName != ev.SchemaName) {
		return wftype.Permanent(fmt.Errorf("%s event %s does not name one catalog of its tenant %q: not sent to any subscriber", ev.EventType, ev.EventID, ev.SchemaName))
	}
	ok, err := h.d.Store.DeletionRecorded(ctx, p.CatalogID, "", ev.SchemaName)
	if err != nil {
		return err
	}
	if !ok {
		return wftype.Permanent(fmt.Errorf("%s event %s: the registry has no record of the deletion of catalog %q with schema %q: not sent to any subscriber",
			ev.EventType, ev.EventID, p.CatalogID, ev.SchemaName))
	}
	return nil
}

// maxResponseSnippet bounds the part of a failed response kept in the error.
const maxResponseSnippet = 512

// Deliver is the webhook_delivery handler: one signed POST of the event to
// one subscriber.
func (h *Handlers) Deliver(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	d := &h.d
	var in deliveryInputs
	if err := decodeInputs(task.Inputs, &in); err != nil {
		return nil, err
	}
	id, err := uuid.Parse(in.SubscriberID)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error reading inputs: subscriber_id %q is not a UUID", in.SubscriberID))
	}
	sub, err := d.Store.GetWebhookSubscriber(ctx, id)
	if errors.Is(err, wftype.ErrNotFound) {
		return nil, wftype.Permanent(fmt.Errorf("webhook subscriber %s was removed", id))
	}
	if err != nil {
		return nil, err
	}
	if len(in.Payload) == 0 {
		in.Payload = json.RawMessage(`{}`)
	}
	body, err := json.Marshal(in.Event)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error encoding the delivery: %w", err))
	}
	ts := strconv.FormatInt(d.Clock.Now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, strings.NewReader(string(body)))
	if err != nil {
		// The URL may carry credentials, and a parse error quotes it.
		return nil, wftype.Permanent(fmt.Errorf("error building the request to webhook subscriber %s: %w", id, unwrapURLError(err)))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "wf-webhooks/1")
	// The receiver may continue the trace of the run (and so of the
	// request that caused the event), as the http runner's endpoints do.
	tracing.Inject(ctx, propagation.HeaderCarrier(req.Header))
	req.Header.Set(HeaderEventType, in.EventType)
	req.Header.Set(HeaderDeliveryID, task.ID.String())
	switch sub.Signature {
	case SchemeStandard:
		key, err := StandardKey(sub.Secret)
		if err != nil {
			return nil, wftype.Permanent(fmt.Errorf("webhook subscriber %s: %w", id, err))
		}
		// Header names as the specification spells them (lower case);
		// Header.Set would canonicalise them, which HTTP/1.1 receivers
		// accept too, but some verifiers look them up verbatim.
		req.Header[HeaderWebhookID] = []string{in.EventID}
		req.Header[HeaderWebhookTimestamp] = []string{ts}
		req.Header[HeaderWebhookSignature] = []string{SignStandard(key, in.EventID, ts, body)}
	default:
		req.Header.Set(HeaderEventID, in.EventID)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, Sign([]byte(sub.Secret), ts, body))
	}
	start := time.Now()
	resp, err := d.HTTP.Do(req)
	if err != nil {
		// The URL may carry credentials: name the subscriber, not the URL.
		return nil, fmt.Errorf("error posting to webhook subscriber %s: %w", id, unwrapURLError(err))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseSnippet))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	elapsed := time.Since(start)
	if err := classify(resp.StatusCode, id, snippet); err != nil {
		return nil, err
	}
	d.Logger.DebugContext(ctx, "webhook delivered", "subscriber_id", id, "event_id", in.EventID,
		"status_code", resp.StatusCode, "duration", elapsed)
	return json.Marshal(map[string]any{
		"subscriber_id": id.String(), "status_code": resp.StatusCode, "attempt": task.Attempts,
		"duration_ms": elapsed.Milliseconds(),
	})
}

// classify turns a response status into the handler's outcome: nil for 2xx,
// a retryable error for 5xx, 408 and 429, a permanent one otherwise.
func classify(code int, subscriber uuid.UUID, body []byte) error {
	if code >= 200 && code < 300 {
		return nil
	}
	msg := fmt.Errorf("webhook subscriber %s answered %d %s: %s", subscriber, code, http.StatusText(code),
		strings.TrimSpace(strings.ToValidUTF8(string(body), "?")))
	switch {
	case code >= 500, code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return msg
	case code >= 300 && code < 400:
		return wftype.Permanent(fmt.Errorf("%w (redirects are not followed)", msg))
	default:
		return wftype.Permanent(msg)
	}
}

// unwrapURLError drops the *url.Error wrapper, which quotes the URL.
func unwrapURLError(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}
