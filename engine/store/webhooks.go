package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// WebhookSubscriber is a receiver of catalog lifecycle events.
type WebhookSubscriber struct {
	ID  uuid.UUID `json:"subscriber_id"`
	URL string    `json:"url"`
	// Secret signs deliveries. It never leaves wf: it is not marshalled.
	Secret string `json:"-"`
	// EventTypes are event types or globs (path.Match syntax, catalog.*).
	EventTypes []string `json:"event_types"`
	// Signature is how deliveries are signed: "wf" or "standard" (Standard
	// Webhooks).
	Signature string    `json:"signature"`
	CreatedAt time.Time `json:"created_at"`
}

// NewWebhookSubscriber is a subscriber to add.
type NewWebhookSubscriber struct {
	URL        string
	Secret     string
	EventTypes []string
	// Signature is "wf" (default when empty) or "standard".
	Signature string
}

const webhookColumns = `subscriber_id, url, secret, event_types, signature, created_at`

func scanWebhook(row pgx.Row) (WebhookSubscriber, error) {
	var w WebhookSubscriber
	err := row.Scan(&w.ID, &w.URL, &w.Secret, &w.EventTypes, &w.Signature, &w.CreatedAt)
	w.CreatedAt = w.CreatedAt.UTC()
	return w, err
}

// InsertWebhookSubscriber adds a subscriber with a new UUIDv7 id.
func (s *Store) InsertWebhookSubscriber(ctx context.Context, n NewWebhookSubscriber) (WebhookSubscriber, error) {
	id, _, err := NewID()
	if err != nil {
		return WebhookSubscriber{}, err
	}
	const q = `
INSERT INTO tasks.webhook_subscribers (subscriber_id, url, secret, event_types, signature)
VALUES ($1, $2, $3, $4, coalesce(nullif($5, ''), 'wf'))
RETURNING ` + webhookColumns
	w, err := scanWebhook(s.db.QueryRow(ctx, q, id, n.URL, n.Secret, n.EventTypes, n.Signature))
	return w, wrap("adding webhook subscriber", err)
}

// ListWebhookSubscribers returns every subscriber, oldest first. The table
// is small: matching event types against globs happens in Go.
func (s *Store) ListWebhookSubscribers(ctx context.Context) ([]WebhookSubscriber, error) {
	rows, err := s.db.Query(ctx, `SELECT `+webhookColumns+` FROM tasks.webhook_subscribers ORDER BY created_at, subscriber_id`)
	if err != nil {
		return nil, wrap("listing webhook subscribers", err)
	}
	defer rows.Close()
	var out []WebhookSubscriber
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, wrap("reading webhook subscribers", err)
		}
		out = append(out, w)
	}
	return out, wrap("listing webhook subscribers", rows.Err())
}

// GetWebhookSubscriber returns one subscriber, or ErrNotFound.
func (s *Store) GetWebhookSubscriber(ctx context.Context, id uuid.UUID) (WebhookSubscriber, error) {
	w, err := scanWebhook(s.db.QueryRow(ctx, `SELECT `+webhookColumns+` FROM tasks.webhook_subscribers WHERE subscriber_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, fmt.Errorf("webhook subscriber %s: %w", id, wftype.ErrNotFound)
	}
	return w, wrap("reading webhook subscriber", err)
}

// DeleteWebhookSubscriber removes a subscriber, or fails with ErrNotFound.
// Deliveries already queued for it fail permanently when they run.
func (s *Store) DeleteWebhookSubscriber(ctx context.Context, id uuid.UUID) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM tasks.webhook_subscribers WHERE subscriber_id = $1`, id)
	if err != nil {
		return wrap("removing webhook subscriber", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("webhook subscriber %s: %w", id, wftype.ErrNotFound)
	}
	return nil
}
