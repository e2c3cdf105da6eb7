package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// Session is a dashboard sign-in: the token it was exchanged for (by name
// and hash) and when it ends.
type Session struct {
	TokenName   string
	TokenSHA256 string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// CreateSession records a session under the SHA-256 of its cookie value,
// valid for ttl, and deletes the sessions that have expired.
func (s *Store) CreateSession(ctx context.Context, sessionSHA256 []byte, tokenName, tokenSHA256 string, ttl time.Duration) (Session, error) {
	var out Session
	err := s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `DELETE FROM tasks.ui_sessions WHERE expires_at <= now()`); err != nil {
			return err
		}
		const q = `
INSERT INTO tasks.ui_sessions (session_sha256, token_name, token_sha256, expires_at)
VALUES ($1, $2, $3, now() + $4::interval)
RETURNING token_name, token_sha256, created_at, expires_at`
		return tx.db.QueryRow(ctx, q, sessionSHA256, tokenName, tokenSHA256, ttl).
			Scan(&out.TokenName, &out.TokenSHA256, &out.CreatedAt, &out.ExpiresAt)
	})
	return out, wrap("creating a dashboard session", err)
}

// GetSession returns the unexpired session with this cookie hash, or
// wftype.ErrNotFound.
func (s *Store) GetSession(ctx context.Context, sessionSHA256 []byte) (Session, error) {
	const q = `
SELECT token_name, token_sha256, created_at, expires_at FROM tasks.ui_sessions
WHERE session_sha256 = $1 AND expires_at > now()`
	var out Session
	err := s.db.QueryRow(ctx, q, sessionSHA256).Scan(&out.TokenName, &out.TokenSHA256, &out.CreatedAt, &out.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, fmt.Errorf("dashboard session: %w", wftype.ErrNotFound)
	}
	return out, wrap("reading a dashboard session", err)
}

// DeleteSession ends a session (sign-out); ending one that does not exist
// is not an error.
func (s *Store) DeleteSession(ctx context.Context, sessionSHA256 []byte) error {
	_, err := s.db.Exec(ctx, `DELETE FROM tasks.ui_sessions WHERE session_sha256 = $1`, sessionSHA256)
	return wrap("deleting a dashboard session", err)
}
