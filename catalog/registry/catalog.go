// Package registry is the tenant registry: catalogs (each with the
// schema_name its tasks carry) and their collections (each with a layer
// configuration). The ingestion gateway validates against it and the
// janitor dead-letters tasks whose tenant is gone. Creating and deleting
// write catalog.* and collection.* events to the outbox in the same
// transaction as the change, so subscribers (cloud provisioning, cleanup)
// see exactly the changes that committed.
//
// The HTTP API and `wf catalogs` share this package; the SQL lives in the
// store.
package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/wfhq/wf/catalog/outbox"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
)

// Event types the registry emits.
const (
	EventCatalogCreated    = "catalog.created"
	EventCatalogDeleted    = "catalog.deleted"
	EventCollectionCreated = "collection.created"
	EventCollectionDeleted = "collection.deleted"
)

// Limits on free-text fields.
const (
	maxTitle       = 1000
	maxDescription = 10000
)

var (
	// Both at most maxName bytes, checked apart: a counted repetition
	// ({0,62}) compiles to a program ~60 times larger, kept by every wf
	// process.
	idRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// reservedSchemas are names a tenant schema may not take: wf's own schemas,
// PostgreSQL's, and the schema_name of platform tasks.
var reservedSchemas = map[string]bool{
	"system": true, "public": true, "catalog": true, "tasks": true, "information_schema": true,
}

// ValidID reports whether s is a valid catalog or collection id: 1 to 63
// lower-case letters, digits, '_' or '-', starting with a letter or digit.
func ValidID(s string) bool { return len(s) <= maxName && idRE.MatchString(s) }

// maxName is the longest id or schema name: PostgreSQL's identifiers.
const maxName = 63

// IDRule describes a valid catalog or collection id, for error messages.
const IDRule = "1 to 63 lower-case letters, digits, '_' or '-', starting with a letter or digit"

// ValidationError lists every field of a request that breaks the registry's
// rules, each with its JSON pointer in the request.
type ValidationError struct {
	Errors spec.InputErrors
}

// Error implements error.
func (e *ValidationError) Error() string { return e.Errors.Error() }

// DeriveSchemaName returns the tenant schema of a catalog created without
// one: "s_" plus the id with '-' turned into '_', shortened with a hash of the
// id when that is longer than 63 characters.
func DeriveSchemaName(id string) string {
	name := "s_" + strings.ReplaceAll(id, "-", "_")
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(id))
	return name[:54] + "_" + hex.EncodeToString(sum[:])[:8]
}

// NewCatalog is a catalog to create.
type NewCatalog struct {
	ID string
	// SchemaName is the tenant schema; "" derives it (DeriveSchemaName).
	SchemaName  string
	Title       *string
	Description *string
	// Metadata is a JSON object (default {}).
	Metadata json.RawMessage
}

// NewCollection is a collection to create.
type NewCollection struct {
	CatalogID string
	ID        string
	Title     *string
	// LayerConfig is the collection's layer configuration, a JSON object
	// (default {}).
	LayerConfig json.RawMessage
}

// Registry creates, reads and deletes catalogs and collections.
type Registry struct {
	store *store.Store
	// events writes the registry's events: in the write's transaction, or
	// through the outbox when the catalog has its own database.
	events *outbox.Writer
	files  client.Files // nil: asset URIs are not checked against the tenant's folder
}

// New returns a registry writing through st, the catalog's store (on a
// pool), and emitting its events with em, the queue's emitter. On one
// database the events are written in the transaction of the write they
// describe; when st and em are on different databases they are recorded in
// the catalog's outbox in that transaction and relayed into the queue after
// it commits (see catalog/outbox for what that guarantees).
func New(st *store.Store, em *events.Emitter) *Registry {
	return &Registry{store: st, events: outbox.NewWriter(st, em)}
}

// inTx runs fn in one transaction of the catalog's database, its events
// relayed after the commit when the catalog is apart (outbox.Writer.InTx).
func (r *Registry) inTx(ctx context.Context, fn func(st *store.Store) error) error {
	return r.events.InTx(ctx, fn)
}

// write runs fn in one transaction (inTx) and returns what fn returns; when
// fn or the commit fails, it returns the zero T and the error wrapped as
// "error <doing>: …".
func write[T any](ctx context.Context, r *Registry, doing string, fn func(st *store.Store) (T, error)) (T, error) {
	var out T
	err := r.inTx(ctx, func(st *store.Store) error {
		var err error
		out, err = fn(st)
		return err
	})
	if err != nil {
		var zero T
		return zero, fmt.Errorf("error %s: %w", doing, err)
	}
	return out, nil
}

// WithFiles returns a copy of r that checks the URI of an asset it adds
// with f, for the catalog's tenant (its schema_name): a local path or
// file:// URL outside the tenant's folder is a ValidationError at /uri, as
// a task's file inputs are (client.Client.WithFiles).
func (r *Registry) WithFiles(f client.Files) *Registry {
	out := *r
	out.files = f
	return &out
}

// checkObject appends an error when raw is set and is not a JSON object.
func checkObject(errs spec.InputErrors, pointer string, raw json.RawMessage) spec.InputErrors {
	if len(raw) == 0 {
		return errs
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return append(errs, spec.InputError{Pointer: pointer, Message: "must be a JSON object"})
	}
	return errs
}

// checkText appends an error when s is longer than limit characters.
func checkText(errs spec.InputErrors, pointer string, s *string, limit int) spec.InputErrors {
	if s != nil && len([]rune(*s)) > limit {
		return append(errs, spec.InputError{Pointer: pointer, Message: fmt.Sprintf("must be at most %d characters", limit)})
	}
	return errs
}

// Create validates and inserts a catalog and emits catalog.created, in one
// transaction. It fails with a *ValidationError, or wftype.ErrConflict when
// the id or the schema name is taken.
func (r *Registry) Create(ctx context.Context, c NewCatalog) (store.Catalog, error) {
	var errs spec.InputErrors
	if !ValidID(c.ID) {
		errs = append(errs, spec.InputError{Pointer: "/catalog_id", Message: "must be " + IDRule})
	}
	if c.SchemaName == "" && ValidID(c.ID) {
		c.SchemaName = DeriveSchemaName(c.ID)
	}
	switch {
	case c.SchemaName == "":
	case len(c.SchemaName) > maxName || !schemaRE.MatchString(c.SchemaName):
		errs = append(errs, spec.InputError{Pointer: "/schema_name", Message: "must be 1 to 63 lower-case letters, digits or '_', not starting with a digit"})
	case reservedSchemas[c.SchemaName] || strings.HasPrefix(c.SchemaName, "pg_"):
		errs = append(errs, spec.InputError{Pointer: "/schema_name", Message: fmt.Sprintf("%q is reserved", c.SchemaName)})
	}
	errs = checkText(errs, "/title", c.Title, maxTitle)
	errs = checkText(errs, "/description", c.Description, maxDescription)
	errs = checkObject(errs, "/metadata", c.Metadata)
	if len(errs) > 0 {
		return store.Catalog{}, &ValidationError{Errors: errs}
	}
	return write(ctx, r, fmt.Sprintf("creating catalog %q", c.ID), func(st *store.Store) (store.Catalog, error) {
		out, err := st.CreateCatalog(ctx, store.NewCatalog{
			ID: c.ID, SchemaName: c.SchemaName, Title: c.Title, Description: c.Description, Metadata: c.Metadata,
		})
		if err != nil {
			return out, err
		}
		return out, r.emit(ctx, st, EventCatalogCreated, events.ScopeCatalog, out.SchemaName,
			map[string]any{"catalog_id": out.ID, "schema_name": out.SchemaName})
	})
}

// emit writes one registry event through st, bound to a transaction.
func (r *Registry) emit(ctx context.Context, st *store.Store, typ, scope, schemaName string, payload map[string]any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("error encoding %s event: %w", typ, err)
	}
	// Every subscriber and webhook receiver sees the event: an asset's URI
	// (or any URL in metadata or notes) goes out without the password or
	// signed query it may carry. The registry's rows keep them.
	b = redact.JSON(b)
	if err := r.events.Emit(ctx, st, events.Event{Type: typ, Scope: scope, SchemaName: schemaName, Payload: b}); err != nil {
		return fmt.Errorf("error emitting %s: %w", typ, err)
	}
	return nil
}

// Get returns one catalog, or an error wrapping wftype.ErrNotFound.
func (r *Registry) Get(ctx context.Context, id string) (store.Catalog, error) {
	return r.store.GetCatalog(ctx, id)
}

// List returns catalogs ordered by id, one page at a time; a non-nil ids
// limits the list to those catalogs.
func (r *Registry) List(ctx context.Context, ids []string, p store.Page) ([]store.Catalog, error) {
	return r.store.ListCatalogs(ctx, ids, p)
}

// Delete deletes a catalog and its collections and emits catalog.deleted
// (payload: catalog_id, schema_name, collections) in the same transaction.
// The catalog's live tasks are dead-lettered by the janitor's orphan sweep.
func (r *Registry) Delete(ctx context.Context, id string) (store.Catalog, error) {
	return write(ctx, r, fmt.Sprintf("deleting catalog %q", id), func(st *store.Store) (store.Catalog, error) {
		c, cols, err := st.DeleteCatalog(ctx, id)
		if err != nil {
			return c, err
		}
		if cols == nil {
			cols = []string{}
		}
		return c, r.emit(ctx, st, EventCatalogDeleted, events.ScopeCatalog, c.SchemaName,
			map[string]any{"catalog_id": c.ID, "schema_name": c.SchemaName, "collections": cols})
	})
}

// AddCollection validates and inserts a collection and emits
// collection.created, in one transaction. It fails with a *ValidationError,
// wftype.ErrNotFound for a missing catalog, or wftype.ErrConflict.
func (r *Registry) AddCollection(ctx context.Context, c NewCollection) (store.Collection, error) {
	var errs spec.InputErrors
	if !ValidID(c.ID) {
		errs = append(errs, spec.InputError{Pointer: "/collection_id", Message: "must be " + IDRule})
	}
	errs = checkText(errs, "/title", c.Title, maxTitle)
	errs = checkObject(errs, "/layer_config", c.LayerConfig)
	if len(errs) > 0 {
		return store.Collection{}, &ValidationError{Errors: errs}
	}
	doing := fmt.Sprintf("adding collection %q to catalog %q", c.ID, c.CatalogID)
	return inCatalogTx(ctx, r, doing, c.CatalogID, nil, func(st *store.Store, cat store.Catalog) (store.Collection, error) {
		out, err := st.CreateCollection(ctx, store.NewCollection{
			CatalogID: c.CatalogID, ID: c.ID, Title: c.Title, LayerConfig: c.LayerConfig,
		})
		if err != nil {
			return out, err
		}
		// The collection's feature table exists from its registration on
		// (collection.deleted drops it, through a collection_drop task).
		ft, err := store.NewFeatureTable(cat.SchemaName, out.ID)
		if err != nil {
			return out, err
		}
		if err := st.CreateFeatureTable(ctx, ft); err != nil {
			return out, err
		}
		return out, r.emit(ctx, st, EventCollectionCreated, events.ScopeCollection, cat.SchemaName,
			map[string]any{"catalog_id": out.CatalogID, "collection_id": out.ID})
	})
}

// GetCollection returns one collection, or an error wrapping wftype.ErrNotFound.
func (r *Registry) GetCollection(ctx context.Context, catalogID, id string) (store.Collection, error) {
	return r.store.GetCollection(ctx, catalogID, id)
}

// ListCollections returns the collections of an existing catalog (else
// wftype.ErrNotFound) ordered by id, one page at a time.
func (r *Registry) ListCollections(ctx context.Context, catalogID string, p store.Page) ([]store.Collection, error) {
	if _, err := r.store.GetCatalog(ctx, catalogID); err != nil {
		return nil, err
	}
	return r.store.ListCollections(ctx, catalogID, p)
}

// RemoveCollection deletes one collection and emits collection.deleted
// (payload: catalog_id, collection_id) in the same transaction.
func (r *Registry) RemoveCollection(ctx context.Context, catalogID, id string) (store.Collection, error) {
	doing := fmt.Sprintf("removing collection %q from catalog %q", id, catalogID)
	return inCatalogTx(ctx, r, doing, catalogID, nil, func(st *store.Store, cat store.Catalog) (store.Collection, error) {
		out, err := st.DeleteCollection(ctx, catalogID, id)
		if err != nil {
			return out, err
		}
		return out, r.emit(ctx, st, EventCollectionDeleted, events.ScopeCollection, cat.SchemaName,
			map[string]any{"catalog_id": catalogID, "collection_id": id})
	})
}
