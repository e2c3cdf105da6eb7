package gcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// Event types PushReceiver writes, one per object notification.
const (
	EventTypeFinalized = "storage.object.finalized"
	EventTypeDeleted   = "storage.object.deleted"
	EventTypeArchived  = "storage.object.archived"
)

// inboxSource names Cloud Storage notifications in tasks.inbox_messages.
const inboxSource = "gcs"

// Errors Receive returns; the HTTP layer answers 401, 400 and 403.
var (
	// ErrPushUnauthorized: no token, or one that is not a valid Google
	// OIDC token for the audience from the configured service account.
	ErrPushUnauthorized = errors.New("unauthorized push")
	// ErrBadPush: a body that is not a Pub/Sub push of a Cloud Storage
	// notification.
	ErrBadPush = errors.New("malformed push")
	// ErrPushForbidden: a push whose subscription is not the one recorded
	// for the bucket's catalog.
	ErrPushForbidden = errors.New("push from another catalog's subscription")
)

// PushConfig configures a PushReceiver.
type PushConfig struct {
	// Store and Emitter write the inbox record and the event. Store is
	// required; nil Emitter means events.NewEmitter(Store).
	Store   *store.Store
	Emitter *events.Emitter
	// Audience is the token's expected audience (gcp.push_audience, else
	// gcp.push_endpoint). Required.
	Audience string
	// ServiceAccount is the only e-mail address whose tokens are accepted
	// (gcp.push_service_account). Required.
	ServiceAccount string
	// CertsClient fetches Google's token signing keys
	// (https://www.googleapis.com/oauth2/v3/certs, cached as its headers
	// say); nil means http.DefaultClient. Tests point it at keys of their own.
	CertsClient *http.Client
	Logger      *slog.Logger
}

// PushReceiver turns Pub/Sub push deliveries of Cloud Storage
// notifications into events: it verifies the push's OIDC token, finds the
// catalog that owns the bucket, and writes one event per message id into
// the outbox (a redelivery writes nothing), so the push may be acknowledged
// once Receive returns.
type PushReceiver struct {
	cfg       PushConfig
	validator *idtoken.Validator
	emitter   *events.Emitter
	log       *slog.Logger
}

// NewPushReceiver checks cfg and builds the receiver.
func NewPushReceiver(ctx context.Context, cfg PushConfig) (*PushReceiver, error) {
	if cfg.Store == nil || cfg.Audience == "" || cfg.ServiceAccount == "" {
		return nil, errors.New("error configuring the storage push receiver: Store, Audience and ServiceAccount are required")
	}
	var opts []idtoken.ClientOption
	if cfg.CertsClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.CertsClient))
	}
	v, err := idtoken.NewValidator(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("error configuring the storage push receiver: %w", err)
	}
	em := cfg.Emitter
	if em == nil {
		em = events.NewEmitter(cfg.Store)
	}
	return &PushReceiver{cfg: cfg, validator: v, emitter: em, log: cmp.Or(cfg.Logger, slog.Default())}, nil
}

// PushResult is what Receive did with one push.
type PushResult struct {
	// Status is "stored" (a new event), "duplicate" (the message was
	// stored before) or "ignored" (nothing for wf: Reason says why).
	Status  string `json:"status"`
	EventID string `json:"event_id,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// pushBody is a Pub/Sub push delivery (the wrapped form).
type pushBody struct {
	Message struct {
		Attributes  map[string]string `json:"attributes"`
		Data        string            `json:"data"`
		MessageID   string            `json:"messageId"`
		MessageID2  string            `json:"message_id"`
		PublishTime string            `json:"publishTime"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// objectResource is what wf reads of a JSON_API_V1 payload.
type objectResource struct {
	Size        string `json:"size"`
	ContentType string `json:"contentType"`
	MD5Hash     string `json:"md5Hash"`
}

var eventTypes = map[string]string{
	EventFinalize: EventTypeFinalized,
	EventDelete:   EventTypeDeleted,
	EventArchive:  EventTypeArchived,
}

// Receive handles one push: authorization is the request's Authorization
// header, body its body. A nil error means the push may be acknowledged.
func (p *PushReceiver) Receive(ctx context.Context, authorization string, body []byte) (PushResult, error) {
	if err := p.verify(ctx, authorization); err != nil {
		return PushResult{}, err
	}
	var b pushBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil {
		return PushResult{}, fmt.Errorf("%w: the body is not a Pub/Sub push: %w", ErrBadPush, err)
	}
	m := b.Message
	id := cmp.Or(m.MessageID, m.MessageID2)
	a := m.Attributes
	if id == "" || a["bucketId"] == "" || a["objectId"] == "" || a["eventType"] == "" || b.Subscription == "" {
		return PushResult{}, fmt.Errorf("%w: a push of a Cloud Storage notification has message.messageId, message.attributes bucketId, objectId and eventType, and subscription", ErrBadPush)
	}
	typ, ok := eventTypes[a["eventType"]]
	if !ok {
		return PushResult{Status: "ignored", Reason: "event type " + a["eventType"] + " changes no asset"}, nil
	}
	owner, err := p.cfg.Store.Catalog().GCPBucketOwner(ctx, a["bucketId"])
	if errors.Is(err, wftype.ErrNotFound) {
		// Pushes for a bucket no catalog owns (any more) are acknowledged
		// and dropped: redelivering them would change nothing.
		return PushResult{Status: "ignored", Reason: "no catalog owns bucket " + a["bucketId"]}, nil
	}
	if err != nil {
		return PushResult{}, err
	}
	if b.Subscription != owner.Subscription {
		return PushResult{}, fmt.Errorf("%w: bucket %s's notifications arrive through %s, not %s", ErrPushForbidden, owner.Bucket, owner.Subscription, b.Subscription)
	}
	in := StorageEventInputs{
		CatalogID: owner.CatalogID, Bucket: a["bucketId"], Object: a["objectId"], EventType: a["eventType"],
		Generation: a["objectGeneration"], OverwrittenByGeneration: a["overwrittenByGeneration"],
		EventTime: a["eventTime"], MessageID: id,
	}
	if data, err := base64.StdEncoding.DecodeString(m.Data); err == nil && a["payloadFormat"] == payloadJSON {
		var o objectResource
		if json.Unmarshal(data, &o) == nil {
			in.Size, in.ContentType, in.MD5Hash = o.Size, o.ContentType, o.MD5Hash
		}
	}
	payload, err := json.Marshal(in)
	if err != nil {
		return PushResult{}, fmt.Errorf("error encoding the storage event: %w", err)
	}
	var res PushResult
	errDuplicate := errors.New("duplicate")
	err = p.cfg.Store.InTx(ctx, func(st *store.Store) error {
		r, err := p.emitter.EmitIn(ctx, st, events.Event{Type: typ, Scope: events.ScopeCatalog, SchemaName: owner.SchemaName, Payload: payload})
		if err != nil {
			return err
		}
		fresh, err := st.RememberInboxMessage(ctx, inboxSource, id, r.Event.ID)
		if err != nil {
			return err
		}
		if !fresh {
			return errDuplicate // rolls the event back
		}
		res = PushResult{Status: "stored", EventID: r.Event.ID.String()}
		return nil
	})
	if errors.Is(err, errDuplicate) {
		return PushResult{Status: "duplicate"}, nil
	}
	if err != nil {
		return PushResult{}, fmt.Errorf("error storing storage notification %s: %w", id, err)
	}
	return res, nil
}

// verify checks the push's bearer token: a Google-signed OIDC token for the
// audience, issued by Google to the configured service account, with its
// e-mail verified.
func (p *PushReceiver) verify(ctx context.Context, authorization string) error {
	scheme, tok, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return fmt.Errorf("%w: the push carries no bearer token", ErrPushUnauthorized)
	}
	pl, err := p.validator.Validate(ctx, tok, p.cfg.Audience)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPushUnauthorized, err)
	}
	if pl.Issuer != "accounts.google.com" && pl.Issuer != "https://accounts.google.com" {
		return fmt.Errorf("%w: the token was issued by %q, not Google", ErrPushUnauthorized, pl.Issuer)
	}
	email, _ := pl.Claims["email"].(string)
	verified, _ := pl.Claims["email_verified"].(bool)
	if email != p.cfg.ServiceAccount || !verified {
		return fmt.Errorf("%w: the token is not the push service account's", ErrPushUnauthorized)
	}
	return nil
}
