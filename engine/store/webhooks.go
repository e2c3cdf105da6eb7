package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/internal/secretbox"
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
	// Unreadable is why Secret could not be decrypted (sealed under a key
	// id the keyring does not list, or altered); Secret is empty then.
	// Only ListWebhookSubscribers returns such a subscriber: a listing
	// shows every one, and the fan-out skips these and delivers to the
	// others. Every other read fails instead.
	Unreadable error `json:"-"`
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

// scanWebhook reads one subscriber and decrypts its secret; a secret that
// does not decrypt is an error.
func (s *Store) scanWebhook(row pgx.Row) (WebhookSubscriber, error) {
	w, err := s.scanWebhookLenient(row)
	if err == nil && w.Unreadable != nil {
		err = w.Unreadable
	}
	return w, err
}

// scanWebhookLenient reads one subscriber and decrypts its secret; a secret
// that does not decrypt is left empty and its error kept in Unreadable.
func (s *Store) scanWebhookLenient(row pgx.Row) (WebhookSubscriber, error) {
	var w WebhookSubscriber
	err := row.Scan(&w.ID, &w.URL, &w.Secret, &w.EventTypes, &w.Signature, &w.CreatedAt)
	if err != nil {
		return w, err
	}
	w.CreatedAt = w.CreatedAt.UTC()
	clear, err := s.secrets.Open(w.Secret)
	if err != nil {
		w.Secret, w.Unreadable = "", fmt.Errorf("webhook subscriber %s: %w", w.ID, err)
		return w, nil
	}
	w.Secret = clear
	return w, nil
}

// InsertWebhookSubscriber adds a subscriber with a new UUIDv7 id.
func (s *Store) InsertWebhookSubscriber(ctx context.Context, n NewWebhookSubscriber) (WebhookSubscriber, error) {
	id, _, err := NewID()
	if err != nil {
		return WebhookSubscriber{}, err
	}
	secret, err := s.secrets.Seal(n.Secret)
	if err != nil {
		return WebhookSubscriber{}, err
	}
	const q = `
INSERT INTO tasks.webhook_subscribers (subscriber_id, url, secret, event_types, signature)
VALUES ($1, $2, $3, $4, coalesce(nullif($5, ''), 'wf'))
RETURNING ` + webhookColumns
	w, err := s.scanWebhook(s.db.QueryRow(ctx, q, id, n.URL, secret, n.EventTypes, n.Signature))
	return w, wrap("adding webhook subscriber", err)
}

// ListWebhookSubscribers returns every subscriber, oldest first. The table
// is small: matching event types against globs happens in Go. A subscriber
// whose secret does not decrypt is returned with Unreadable set rather than
// failing the list, so one lost key does not hide (or stall the fan-out to)
// the others.
func (s *Store) ListWebhookSubscribers(ctx context.Context) ([]WebhookSubscriber, error) {
	rows, err := s.db.Query(ctx, `SELECT `+webhookColumns+` FROM tasks.webhook_subscribers ORDER BY created_at, subscriber_id`)
	if err != nil {
		return nil, wrap("listing webhook subscribers", err)
	}
	defer rows.Close()
	var out []WebhookSubscriber
	for rows.Next() {
		w, err := s.scanWebhookLenient(rows)
		if err != nil {
			return nil, wrap("reading webhook subscribers", err)
		}
		out = append(out, w)
	}
	return out, wrap("listing webhook subscribers", rows.Err())
}

// GetWebhookSubscriber returns one subscriber, or ErrNotFound.
func (s *Store) GetWebhookSubscriber(ctx context.Context, id uuid.UUID) (WebhookSubscriber, error) {
	w, err := s.scanWebhook(s.db.QueryRow(ctx, `SELECT `+webhookColumns+` FROM tasks.webhook_subscribers WHERE subscriber_id = $1`, id))
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

// CountSealedWebhookSecrets counts the subscribers whose secret is stored
// encrypted, so a start without keys can refuse a database that needs them.
func (s *Store) CountSealedWebhookSecrets(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM tasks.webhook_subscribers WHERE secret LIKE 'v1:%'`).Scan(&n)
	return n, wrap("counting encrypted webhook secrets", err)
}

// CountUnreadableWebhookSecrets counts the subscribers whose secret this
// store's keys cannot decrypt (the metric wf_webhook_secrets_unreadable):
// wf cannot sign for them, so the fan-out skips them.
func (s *Store) CountUnreadableWebhookSecrets(ctx context.Context) (int, error) {
	subs, err := s.ListWebhookSubscribers(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, w := range subs {
		if w.Unreadable != nil {
			n++
		}
	}
	return n, nil
}

// RotateWebhookSecrets re-encrypts, in one transaction, every subscriber's
// secret not already sealed under the current key (clear ones included),
// and returns how many it rewrote. Run again, it rewrites none. The store
// needs keys (WithSecrets).
func (s *Store) RotateWebhookSecrets(ctx context.Context) (int, error) {
	if s.secrets == nil {
		return 0, errors.New("error rotating webhook secrets: no key is configured (set " + secretbox.EnvKey + ")")
	}
	n := 0
	err := s.InTx(ctx, func(tx *Store) error {
		// The rows are locked: a subscriber added meanwhile waits, one
		// removed meanwhile is not rewritten.
		rows, err := tx.db.Query(ctx, `SELECT subscriber_id, secret FROM tasks.webhook_subscribers ORDER BY subscriber_id FOR UPDATE`)
		if err != nil {
			return wrap("reading webhook secrets", err)
		}
		type stored struct {
			id     uuid.UUID
			secret string
		}
		var all []stored
		for rows.Next() {
			var r stored
			if err := rows.Scan(&r.id, &r.secret); err != nil {
				rows.Close()
				return wrap("reading webhook secrets", err)
			}
			all = append(all, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrap("reading webhook secrets", err)
		}
		for _, r := range all {
			if secretbox.KeyID(r.secret) == s.secrets.Current() {
				continue
			}
			clear, err := s.secrets.Open(r.secret)
			if err != nil {
				return fmt.Errorf("webhook subscriber %s: %w", r.id, err)
			}
			sealed, err := s.secrets.Seal(clear)
			if err != nil {
				return err
			}
			if _, err := tx.db.Exec(ctx, `UPDATE tasks.webhook_subscribers SET secret = $2 WHERE subscriber_id = $1`, r.id, sealed); err != nil {
				return wrap("re-encrypting webhook secret", err)
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
