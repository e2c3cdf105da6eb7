-- wf:database queue
-- wf schema, version 5: dashboard sign-in sessions.
--
-- The dashboard exchanges a bearer token for a session cookie. Only the
-- SHA-256 of the cookie's value is kept, with the name and the SHA-256 of the
-- token it was exchanged for: a session is honoured only while a configured
-- token still has that name and hash, so rotating or removing a token ends
-- its sessions on every instance at once. Rows live until they expire
-- (sign-out deletes its row; sign-in deletes the expired ones).
CREATE TABLE tasks.ui_sessions (
    session_sha256 bytea        PRIMARY KEY,
    token_name     text         NOT NULL,
    token_sha256   text         NOT NULL,
    created_at     timestamptz  NOT NULL DEFAULT now(),
    expires_at     timestamptz  NOT NULL
);

CREATE INDEX ui_sessions_expires_idx ON tasks.ui_sessions (expires_at);
