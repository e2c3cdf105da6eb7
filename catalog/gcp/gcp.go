// Package gcp is the Google Cloud side of the catalog application: the
// builtin handlers gcp_provision (a catalog's bucket, Pub/Sub topic, the
// bucket's notification configuration and the push subscription that
// delivers it to wf), gcp_catalog_cleanup (removing them, or a collection's
// objects, once the catalog or collection is deleted) and gcs_storage_event
// (an object notification become the catalog's asset), and the receiver of
// the Pub/Sub pushes behind POST /hooks/gcs (PushReceiver).
//
// Cloud Storage is reached through Google's JSON API client
// (google.golang.org/api/storage/v1, the client objio uses), Pub/Sub
// through cloud.google.com/go/pubsub/v2's admin clients. Both honour the
// emulators' variables (STORAGE_EMULATOR_HOST, PUBSUB_EMULATOR_HOST), and
// the tests run them against fake-gcs-server and pstest in-process.
//
// Tenancy: every resource carries wf's labels (wf-managed, wf-tenant,
// wf-catalog); provisioning adopts nothing that carries another tenant's or
// no wf labels, cleanup removes only what carries the deleted tenant's, and
// a notification reaches only the catalog recorded as its bucket's owner.
package gcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/api/option"
	storage "google.golang.org/api/storage/v1"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/runners/builtin"
)

// Handler names (specs/gcp.yaml declares their task types).
const (
	NameProvision    = "gcp_provision"
	NameCleanup      = "gcp_catalog_cleanup"
	NameStorageEvent = "gcs_storage_event"
)

// Names lists the handler names Register adds (spec validation needs only
// the names).
func Names() []string { return []string{NameProvision, NameCleanup, NameStorageEvent} }

// Deps are what the handlers need; New binds them when the engine is built.
type Deps struct {
	// Store is the queue's store, with the catalog's (store.WithCatalog):
	// the registry and catalog.gcp_resources are read and written in
	// Store.Catalog(). Required.
	Store *store.Store
	// Emitter writes the asset events into the queue; nil means
	// events.NewEmitter(Store).
	Emitter *events.Emitter
	// Settings is the configuration's gcp section.
	Settings config.GCP
	// StorageOptions build the Cloud Storage client; nil means Application
	// Default Credentials, or the emulator STORAGE_EMULATOR_HOST names.
	StorageOptions []option.ClientOption
	// PubSubOptions build the Pub/Sub client; nil means Application
	// Default Credentials (or PUBSUB_EMULATOR_HOST, which the client reads).
	PubSubOptions []option.ClientOption
	Logger        *slog.Logger
}

// Handlers are the three handlers, bound to their dependencies. The cloud
// clients are built on first use, so that an instance without a gcp
// configuration starts and runs everything else.
type Handlers struct {
	d        Deps
	catalogs *registry.Registry
	paths    objectPath
	log      *slog.Logger

	mu     sync.Mutex
	gcs    *storage.Service
	pubsub *pubsub.Client
}

// New checks d and binds the handlers to it; a missing dependency or a bad
// object path convention is an error here, at start-up.
func New(d Deps) (*Handlers, error) {
	if d.Store == nil {
		return nil, errors.New("error configuring the gcp handlers: Store is required")
	}
	if d.Emitter == nil {
		d.Emitter = events.NewEmitter(d.Store)
	}
	// From here on the handlers deal with the catalog only (the events go
	// through d.Emitter, on the queue).
	d.Store = d.Store.Catalog()
	def := config.Default().GCP
	d.Settings.BucketTemplate = cmp.Or(d.Settings.BucketTemplate, def.BucketTemplate)
	d.Settings.TopicTemplate = cmp.Or(d.Settings.TopicTemplate, def.TopicTemplate)
	d.Settings.SubscriptionTemplate = cmp.Or(d.Settings.SubscriptionTemplate, def.SubscriptionTemplate)
	d.Settings.Location = cmp.Or(d.Settings.Location, def.Location)
	d.Settings.ObjectPath = cmp.Or(d.Settings.ObjectPath, def.ObjectPath)
	paths, err := parseObjectPath(d.Settings.ObjectPath)
	if err != nil {
		return nil, fmt.Errorf("error configuring the gcp handlers: gcp.object_path: %w", err)
	}
	return &Handlers{d: d, catalogs: registry.New(d.Store, d.Emitter), paths: paths, log: cmp.Or(d.Logger, slog.Default())}, nil
}

// Register adds the three handlers to reg. A name reg already holds keeps
// its handler (an embedding program may bring its own) and is reported in
// the error; the other names are registered all the same. Without
// gcp.project the three are marked unserved instead (builtin.Registry.
// MarkUnserved), and without the push settings gcp_provision is: this
// instance then claims none of their tasks and its event consumer creates
// none, rather than completing them with nothing done.
func (h *Handlers) Register(reg *builtin.Registry) error {
	if reason := h.unconfigured(); reason != "" {
		return errors.Join(
			reg.MarkUnserved(NameProvision, reason),
			reg.MarkUnserved(NameCleanup, reason),
			reg.MarkUnserved(NameStorageEvent, reason),
		)
	}
	if h.d.Settings.PushEndpoint == "" || h.d.Settings.PushServiceAccount == "" {
		return errors.Join(
			reg.MarkUnserved(NameProvision, noPush),
			reg.Register(NameCleanup, h.Cleanup),
			reg.Register(NameStorageEvent, h.StorageEvent),
		)
	}
	return errors.Join(
		reg.Register(NameProvision, h.Provision),
		reg.Register(NameCleanup, h.Cleanup),
		reg.Register(NameStorageEvent, h.StorageEvent),
	)
}

// noPush is why gcp_provision cannot run without the push settings.
const noPush = "gcp.push_endpoint and gcp.push_service_account are not set (WF_GCP_PUSH_ENDPOINT, WF_GCP_PUSH_SERVICE_ACCOUNT): the subscription pushes to wf's /hooks/gcs with that account's OIDC token"

// unconfigured says which setting the handlers miss, "" when none.
func (h *Handlers) unconfigured() string {
	if h.d.Settings.Project == "" {
		return "gcp.project is not set (WF_GCP_PROJECT)"
	}
	return ""
}

// Close releases the Pub/Sub client, if one was built.
func (h *Handlers) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pubsub == nil {
		return nil
	}
	err := h.pubsub.Close()
	h.pubsub = nil
	return err
}

// clients returns the Cloud Storage and Pub/Sub clients, built on first
// use; a failure is not kept, the next call tries again.
func (h *Handlers) clients(ctx context.Context) (*storage.Service, *pubsub.Client, error) {
	if h.d.Settings.Project == "" {
		return nil, nil, errNoProject
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gcs == nil {
		opts := h.d.StorageOptions
		if opts == nil {
			opts = []option.ClientOption{option.WithScopes(storage.DevstorageFullControlScope)}
			if ep := objio.EmulatorEndpoint(); ep != "" {
				opts = []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(ep)}
			}
		}
		// The clients outlive this call's context: credentials refresh later.
		svc, err := storage.NewService(context.WithoutCancel(ctx), opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("error creating the Cloud Storage client: %w", err)
		}
		h.gcs = svc
	}
	if h.pubsub == nil {
		c, err := pubsub.NewClient(context.WithoutCancel(ctx), h.d.Settings.Project, h.d.PubSubOptions...)
		if err != nil {
			return nil, nil, fmt.Errorf("error creating the Pub/Sub client: %w", err)
		}
		h.pubsub = c
	}
	return h.gcs, h.pubsub, nil
}
