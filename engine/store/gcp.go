package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// GCPResources is one row of catalog.gcp_resources: the cloud resources
// gcp_provision created or adopted for a catalog.
type GCPResources struct {
	CatalogID  string
	SchemaName string
	Project    string
	Bucket     string
	// Topic and Subscription are full resource names
	// (projects/P/topics/T, projects/P/subscriptions/S).
	Topic          string
	Subscription   string
	NotificationID string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

const gcpColumns = `catalog_id, schema_name, project, bucket, topic, subscription, notification_id, created_at, updated_at`

func scanGCP(row pgx.Row) (GCPResources, error) {
	var g GCPResources
	err := row.Scan(&g.CatalogID, &g.SchemaName, &g.Project, &g.Bucket, &g.Topic, &g.Subscription, &g.NotificationID,
		&g.CreatedAt, &g.UpdatedAt)
	g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	return g, err
}

func gcpError(doing string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return wrap(doing, wftype.ErrNotFound)
	}
	if IsUniqueViolation(err) {
		return wrap(doing+": another catalog owns the bucket", wftype.ErrConflict)
	}
	return wrap(doing, err)
}

// SaveGCPResources records a catalog's cloud resources, replacing what was
// recorded for it; wftype.ErrConflict when another catalog owns the bucket.
// It records nothing (wftype.ErrNotFound) unless the catalog exists with
// that schema_name, so a provisioning that outlived its catalog leaves no
// row behind.
func (s *Store) SaveGCPResources(ctx context.Context, g GCPResources) (GCPResources, error) {
	const q = `
INSERT INTO catalog.gcp_resources AS r (catalog_id, schema_name, project, bucket, topic, subscription, notification_id)
SELECT c.catalog_id, c.schema_name, $3, $4, $5, $6, $7
FROM catalog.catalogs c
WHERE c.catalog_id = $1 AND c.schema_name = $2
ON CONFLICT (catalog_id) DO UPDATE
SET schema_name = excluded.schema_name, project = excluded.project, bucket = excluded.bucket,
    topic = excluded.topic, subscription = excluded.subscription,
    notification_id = excluded.notification_id, updated_at = now()
RETURNING ` + gcpColumns
	out, err := scanGCP(s.db.QueryRow(ctx, q, g.CatalogID, g.SchemaName, g.Project, g.Bucket, g.Topic, g.Subscription, g.NotificationID))
	return out, gcpError("recording the cloud resources of catalog "+g.CatalogID, err)
}

// GetGCPResources returns what is recorded for a catalog (whether or not
// the catalog still exists), or wftype.ErrNotFound.
func (s *Store) GetGCPResources(ctx context.Context, catalogID string) (GCPResources, error) {
	q := `SELECT ` + gcpColumns + ` FROM catalog.gcp_resources WHERE catalog_id = $1`
	out, err := scanGCP(s.db.QueryRow(ctx, q, catalogID))
	return out, gcpError("reading the cloud resources of catalog "+catalogID, err)
}

// GCPBucketOwner returns the resources recorded for a bucket whose catalog
// exists now with the recorded schema_name, or wftype.ErrNotFound: a bucket
// no live catalog owns belongs to no tenant.
func (s *Store) GCPBucketOwner(ctx context.Context, bucket string) (GCPResources, error) {
	const q = `
SELECT r.catalog_id, r.schema_name, r.project, r.bucket, r.topic, r.subscription, r.notification_id, r.created_at, r.updated_at
FROM catalog.gcp_resources r
JOIN catalog.catalogs c ON c.catalog_id = r.catalog_id AND c.schema_name = r.schema_name
WHERE r.bucket = $1`
	out, err := scanGCP(s.db.QueryRow(ctx, q, bucket))
	return out, gcpError("finding the owner of bucket "+bucket, err)
}

// DeleteGCPResources removes a catalog's record once its resources are
// gone; it removes nothing when the record now names another tenant
// (schemaName differs). It reports whether a row went.
func (s *Store) DeleteGCPResources(ctx context.Context, catalogID, schemaName string) (bool, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM catalog.gcp_resources WHERE catalog_id = $1 AND schema_name = $2`, catalogID, schemaName)
	if err != nil {
		return false, wrap("forgetting the cloud resources of catalog "+catalogID, err)
	}
	return tag.RowsAffected() > 0, nil
}

// RememberInboxMessage records that the message (source, id) was received
// and became event eventID. It reports false, writing nothing, when the
// message was received before: run it in the transaction that writes the
// event, so that a redelivery writes no second event.
func (s *Store) RememberInboxMessage(ctx context.Context, source, messageID string, eventID uuid.UUID) (bool, error) {
	const q = `
INSERT INTO tasks.inbox_messages (source, message_id, event_id) VALUES ($1, $2, $3)
ON CONFLICT (source, message_id) DO NOTHING`
	tag, err := s.db.Exec(ctx, q, source, messageID, eventID)
	if err != nil {
		return false, wrap("recording inbox message "+messageID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// PurgeInboxMessages deletes up to limit inbox records received before
// cutoff (older than any redelivery can be) and returns how many went.
func (s *Store) PurgeInboxMessages(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	const q = `
DELETE FROM tasks.inbox_messages
WHERE ctid = ANY (ARRAY(SELECT ctid FROM tasks.inbox_messages WHERE received_at < $1 LIMIT $2))`
	tag, err := s.db.Exec(ctx, q, cutoff, limit)
	if err != nil {
		return 0, wrap("purging inbox messages", err)
	}
	return tag.RowsAffected(), nil
}
