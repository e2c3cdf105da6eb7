-- wf:database queue
-- wf schema, version 7: each webhook subscriber chooses how deliveries are
-- signed: 'wf' (X-WF-Timestamp, X-WF-Signature: sha256=<hex>) or 'standard'
-- (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature:
-- v1,<base64>), whose secret is whsec_ followed by the base64 of the key.
-- Existing subscribers keep wf's scheme. The table is small: the default
-- is stored without a rewrite.
ALTER TABLE tasks.webhook_subscribers
    ADD COLUMN signature text NOT NULL DEFAULT 'wf' CHECK (signature IN ('wf', 'standard'));
