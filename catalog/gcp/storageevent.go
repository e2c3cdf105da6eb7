package gcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// Cloud Storage notification event types (the eventType attribute).
const (
	EventFinalize = "OBJECT_FINALIZE"
	EventDelete   = "OBJECT_DELETE"
	EventArchive  = "OBJECT_ARCHIVE"
)

// OriginStorage is the origin gcs_storage_event notes on the asset events it
// causes (registry.EventNote): the shipped subscriptions start ingestion
// and gdal for those.
const OriginStorage = "storage"

// StorageEventInputs are a gcs_storage_event task's inputs: one object
// notification, as PushReceiver wrote it into the outbox.
type StorageEventInputs struct {
	CatalogID string `json:"catalog_id"`
	Bucket    string `json:"bucket"`
	Object    string `json:"object"`
	// EventType is OBJECT_FINALIZE, OBJECT_DELETE or OBJECT_ARCHIVE.
	EventType  string `json:"event_type"`
	Generation string `json:"generation"`
	// OverwrittenByGeneration is set on the delete or archive of a
	// generation that a newer upload replaced.
	OverwrittenByGeneration string `json:"overwritten_by_generation"`
	Size                    string `json:"size"`
	ContentType             string `json:"content_type"`
	MD5Hash                 string `json:"md5_hash"`
	EventTime               string `json:"event_time"`
	MessageID               string `json:"message_id"`
}

// storageEventOutputs say what the notification did to the catalog.
type storageEventOutputs struct {
	CatalogID    string `json:"catalog_id"`
	Object       string `json:"object"`
	Outcome      string `json:"outcome"` // created | updated | deleted | archived | ignored
	Reason       string `json:"reason,omitempty"`
	AssetID      string `json:"asset_id,omitempty"`
	CollectionID string `json:"collection_id,omitempty"`
	Kind         string `json:"kind,omitempty"`
}

// StorageEvent is the gcs_storage_event handler: it maps one object
// notification to the catalog's asset by the path convention
// (gcp.object_path): finalize records the asset (created or updated),
// delete marks it deleted, archive archived. A notification older than the
// asset's recorded generation, or about a generation a newer upload
// replaced, changes nothing; so does an object outside the convention or
// of an unknown collection (the outputs say why).
func (h *Handlers) StorageEvent(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in StorageEventInputs
	if err := builtin.ReadInputs(task.Inputs, &in, "inputs"); err != nil {
		return nil, err
	}
	// The tenant is the task's; the bucket must be its catalog's.
	owner, err := h.d.Store.GCPBucketOwner(ctx, in.Bucket)
	if errors.Is(err, wftype.ErrNotFound) || (err == nil && (owner.CatalogID != in.CatalogID || owner.SchemaName != task.SchemaName)) {
		return nil, wftype.Permanent(fmt.Errorf("bucket %s is not catalog %s's (tenant %s)", in.Bucket, in.CatalogID, task.SchemaName))
	}
	if err != nil {
		return nil, err
	}
	out := storageEventOutputs{CatalogID: in.CatalogID, Object: in.Object}
	ignore := func(reason string) (json.RawMessage, error) {
		out.Outcome, out.Reason = "ignored", reason
		return json.Marshal(out)
	}
	collection, file, why := h.paths.match(in.Object, in.CatalogID)
	if why != "" {
		return ignore(why)
	}
	col, err := h.d.Store.GetCollection(ctx, in.CatalogID, collection)
	if errors.Is(err, wftype.ErrNotFound) {
		return ignore(fmt.Sprintf("catalog %s has no collection %q", in.CatalogID, collection))
	}
	if err != nil {
		return nil, err
	}
	out.CollectionID, out.AssetID = collection, assetID(collection, file)
	gen, _ := strconv.ParseInt(in.Generation, 10, 64)
	prev, err := h.d.Store.GetAsset(ctx, in.CatalogID, out.AssetID)
	known := err == nil
	if err != nil && !errors.Is(err, wftype.ErrNotFound) {
		return nil, err
	}
	if known && recordedGeneration(prev) > gen {
		return ignore(fmt.Sprintf("generation %d is older than the asset's %d", gen, recordedGeneration(prev)))
	}
	kind, format := classify(file)
	out.Kind = kind
	note := registry.EventNote{"origin": OriginStorage, "generation": in.Generation}
	switch in.EventType {
	case EventFinalize:
		meta, err := json.Marshal(map[string]any{"gcs": map[string]any{
			"bucket": in.Bucket, "object": in.Object, "generation": in.Generation, "size": in.Size,
			"content_type": in.ContentType, "md5_hash": in.MD5Hash, "event_time": in.EventTime,
		}})
		if err != nil {
			return nil, fmt.Errorf("error encoding asset metadata: %w", err)
		}
		if format != "" {
			note["format"] = format
			note["id_attribute"] = idAttribute(col)
		}
		_, err = h.catalogs.RecordAsset(ctx, store.NewAsset{
			CatalogID: in.CatalogID, ID: out.AssetID, CollectionID: &collection,
			URI: "gs://" + in.Bucket + "/" + in.Object, Kind: kind, Metadata: meta,
		}, note)
		if err != nil {
			return nil, err
		}
		out.Outcome = "created"
		if known {
			out.Outcome = "updated"
		}
	case EventDelete, EventArchive:
		if in.OverwrittenByGeneration != "" {
			return ignore("generation " + in.Generation + " was replaced by generation " + in.OverwrittenByGeneration)
		}
		if !known {
			return ignore("no asset records the object")
		}
		st, outcome := store.AssetDeleted, "deleted"
		if in.EventType == EventArchive {
			st, outcome = store.AssetArchived, "archived"
		}
		if _, err := h.catalogs.UpdateAsset(ctx, in.CatalogID, out.AssetID, store.AssetPatch{Status: &st}, note); err != nil {
			return nil, err
		}
		out.Outcome = outcome
	default:
		return ignore("event type " + in.EventType + " changes no asset")
	}
	return json.Marshal(out)
}

// recordedGeneration is the object generation an asset's metadata records
// (0 when none).
func recordedGeneration(a store.Asset) int64 {
	var m struct {
		GCS struct {
			Generation string `json:"generation"`
		} `json:"gcs"`
	}
	if json.Unmarshal(a.Metadata, &m) != nil {
		return 0
	}
	g, _ := strconv.ParseInt(m.GCS.Generation, 10, 64)
	return g
}

// idAttribute is the attribute holding each record's id in a collection's
// uploads: its layer_config's id_attribute, else "id".
func idAttribute(c store.Collection) string {
	var lc struct {
		IDAttribute string `json:"id_attribute"`
	}
	if json.Unmarshal(c.LayerConfig, &lc) == nil && lc.IDAttribute != "" {
		return lc.IDAttribute
	}
	return "id"
}
