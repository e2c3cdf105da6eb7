// Package webhooks delivers catalog lifecycle events to the HTTP receivers
// registered in tasks.webhook_subscribers, through two builtin task types
// (specs/events.yaml):
//
//   - event_dispatch, created by the Subscription that routes catalog.*
//     events, fans one event out: one webhook_delivery task per subscriber
//     whose event types (exact or glob) match, deduplicated per event and
//     subscriber;
//   - webhook_delivery POSTs the event to one subscriber, signed. Its run
//     timeout is the per-attempt timeout; failures are retried with the task
//     type's backoff and end in DEAD_LETTER; a 4xx answer other than 408 and
//     429 (and a redirect, never followed) fails the task at once (FAILED).
//
// # The delivery
//
// The body is the JSON object {"event_id", "event_type", "scope",
// "schema_name", "created_at", "payload"}. The headers are X-WF-Event-ID,
// X-WF-Event-Type, X-WF-Delivery-ID (the task's id), X-WF-Timestamp (Unix
// seconds) and X-WF-Signature: "sha256=" followed by the lower-case hex
// HMAC-SHA256, keyed with the subscriber's secret, of the timestamp, a dot
// and the raw body ("<timestamp>.<body>").
//
// # Verifying a delivery (receiver side)
//
//  1. Read the raw body bytes before parsing them.
//  2. Reject the request when X-WF-Timestamp is more than 5 minutes from
//     your clock (replay protection).
//  3. Compute HMAC-SHA256(secret, X-WF-Timestamp + "." + body), hex-encode
//     it, prefix "sha256=", and compare it with X-WF-Signature in constant
//     time (hmac.compare_digest, crypto.timingSafeEqual, hmac.Equal).
//  4. Answer 2xx quickly. Deliveries are at least once: deduplicate on
//     X-WF-Event-ID. A 5xx, 408 or 429 is retried; another 4xx is not.
//
// In shell: printf '%s.%s' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$SECRET".
// Go receivers may call Verify.
//
// # Secrets
//
// A subscriber's secret must be readable by wf to sign. With keys (secrets.keys or WF_SECRET_KEY)
// set, the store keeps it encrypted in tasks.webhook_subscribers
// (internal/secretbox: AES-256-GCM with a key id, rotated by `wf secrets
// rotate`) and hands the handlers the clear secret; without a key it is
// stored as given. Beside that, PostgreSQL's access control (only wf's role
// reads the table; PUBLIC gets nothing), TLS to the database, and the
// encryption of the disks and backups protect it. wf takes it from an environment variable or a file
// (never the command line, where ps shows it) and never prints it back:
// `wf webhooks list` shows a SHA-256 fingerprint. Rotate a secret by adding
// the subscriber again with a new one and removing the old entry.
//
// # Dependencies without global state
//
// Spec validation needs only the handler names (Names). The handlers get
// their dependencies when the engine is built: New checks a Deps and binds
// both handlers to it, and Register adds them to the registry of the
// process that runs tasks (wf run, wf serve, wf exec alike). A missing
// dependency is a start-up error, never a run-time retry.
package webhooks
