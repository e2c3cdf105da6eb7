package webhooks_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/secretbox"
	"github.com/wfhq/wf/wftype"
)

// TestRotateEncryptsStoredSecrets: secrets stored clear (no key) are
// re-encrypted by RotateWebhookSecrets, the column then holds no clear
// secret, deliveries still verify at the receiver, a second rotation
// changes nothing, a new key takes over with the old one listed, and a
// store without keys refuses to read them.
func TestRotateEncryptsStoredSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := eventSpecs(t)
	pool := dbtest.NewPool(t)
	clear := store.New(pool)
	const secret = "rotate-me-0123456789"
	standard := "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-key-0123456789abcdef"))
	recv := newReceiver(t, secret, 200)
	sub, err := clear.InsertWebhookSubscriber(ctx, store.NewWebhookSubscriber{URL: recv.URL, Secret: secret, EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)
	std, err := clear.InsertWebhookSubscriber(ctx, store.NewWebhookSubscriber{URL: recv.URL, Secret: standard, EventTypes: []string{"catalog.*"}, Signature: webhooks.SchemeStandard})
	require.NoError(t, err)
	stored := func(id uuid.UUID) string {
		var s string
		require.NoError(t, pool.QueryRow(ctx, `SELECT secret FROM tasks.webhook_subscribers WHERE subscriber_id = $1`, id).Scan(&s))
		return s
	}
	require.Equal(t, secret, stored(sub.ID), "without a key secrets stay clear")

	k1 := "k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("1", 32)))
	k2 := "k2:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("2", 32)))
	keys1, err := secretbox.Parse(k1)
	require.NoError(t, err)
	st := store.New(pool).WithSecrets(keys1)
	n, err := st.RotateWebhookSecrets(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range []uuid.UUID{sub.ID, std.ID} {
		s := stored(id)
		require.True(t, strings.HasPrefix(s, "v1:k1:"), s)
		require.NotContains(t, s, secret)
		require.NotContains(t, s, strings.TrimPrefix(standard, "whsec_"))
	}
	n, err = st.RotateWebhookSecrets(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a second rotation rewrites nothing")
	got, err := st.GetWebhookSubscriber(ctx, std.ID)
	require.NoError(t, err)
	require.Equal(t, standard, got.Secret)

	// Deliveries sign with the decrypted secret: the receiver verifies.
	deliver := func(st *store.Store) error {
		h, err := webhooks.New(webhooks.Deps{Store: st, Client: client.New(st, set), HTTP: loopbackHTTP(t)})
		require.NoError(t, err)
		return deliverOnce(t, h, sub.ID)
	}
	require.NoError(t, deliver(st))
	_, valid := recv.counts()
	require.Equal(t, 1, valid)

	// Without keys, a sealed secret is an error, never sent.
	_, err = clear.GetWebhookSubscriber(ctx, sub.ID)
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	require.Error(t, deliver(clear))
	n, err = clear.CountSealedWebhookSecrets(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	// A new current key, the old one listed: still readable, then rotated.
	keys2, err := secretbox.Parse(k2 + "," + k1)
	require.NoError(t, err)
	st2 := store.New(pool).WithSecrets(keys2)
	n, err = st2.RotateWebhookSecrets(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.True(t, strings.HasPrefix(stored(sub.ID), "v1:k2:"))
	only2, err := secretbox.Parse(k2)
	require.NoError(t, err)
	require.NoError(t, deliver(store.New(pool).WithSecrets(only2)))
	_, valid = recv.counts()
	require.Equal(t, 2, valid)

	// Added with a key, a secret is stored sealed from the start.
	added, err := st2.InsertWebhookSubscriber(ctx, store.NewWebhookSubscriber{URL: recv.URL, Secret: secret, EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)
	require.Equal(t, secret, added.Secret)
	require.True(t, strings.HasPrefix(stored(added.ID), "v1:k2:"))
}

// deliverOnce runs the webhook_delivery handler once, in a task's first
// attempt, for a catalog.created event to the subscriber id.
func deliverOnce(t *testing.T, h *webhooks.Handlers, id uuid.UUID) error {
	t.Helper()
	taskID, _, err := store.NewID()
	require.NoError(t, err)
	in, err := json.Marshal(map[string]any{"subscriber_id": id.String(), "event_id": "e1", "event_type": "catalog.created", "payload": map[string]any{}})
	require.NoError(t, err)
	_, err = h.Deliver(context.Background(), &wftype.Task{ID: taskID, Inputs: in, Attempts: 1}, nil)
	return err
}

// TestUnreadableSecretSkipsOnlyItsSubscriber: a subscriber whose secret is
// sealed under a key the running wf does not have (a key id it does not
// list) is skipped by the fan-out with a logged error, and counted; the
// other subscribers of the event still get their deliveries, which verify
// at the receiver.
func TestUnreadableSecretSkipsOnlyItsSubscriber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := eventSpecs(t)
	pool := dbtest.NewPool(t)
	keys := func(text string) *secretbox.Keyring {
		k, err := secretbox.Parse(text)
		require.NoError(t, err)
		return k
	}
	k1 := keys("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("1", 32))))
	k9 := keys("k9:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("9", 32))))
	st := store.New(pool).WithSecrets(k1)

	good := newReceiver(t, "secret-of-the-readable-one", 200)
	lost := newReceiver(t, "secret-under-a-lost-key", 200)
	// The unreadable one is added first, so a fan-out that stops at it
	// would reach no one.
	lostSub, err := store.New(pool).WithSecrets(k9).InsertWebhookSubscriber(ctx, store.NewWebhookSubscriber{URL: lost.URL, Secret: lost.secret, EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)
	goodSub, err := st.InsertWebhookSubscriber(ctx, store.NewWebhookSubscriber{URL: good.URL, Secret: good.secret, EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)

	var logs bytes.Buffer
	h, err := webhooks.New(webhooks.Deps{Store: st, Client: client.New(st, set), HTTP: loopbackHTTP(t),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	taskID, _, err := store.NewID()
	require.NoError(t, err)
	out, err := h.Dispatch(ctx, &wftype.Task{ID: taskID, Attempts: 1,
		Inputs: json.RawMessage(`{"event_id": "e-unreadable", "event_type": "catalog.created", "schema_name": "cat_a", "payload": {"catalog_id": "a"}}`)}, nil)
	require.NoError(t, err, "one unreadable secret stalled the fan-out")
	var res struct {
		Created       int      `json:"created"`
		SubscriberIDs []string `json:"subscriber_ids"`
		Skipped       []string `json:"skipped_subscriber_ids"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, 1, res.Created)
	require.Equal(t, []string{goodSub.ID.String()}, res.SubscriberIDs)
	require.Equal(t, []string{lostSub.ID.String()}, res.Skipped)
	require.Contains(t, logs.String(), "level=ERROR")
	require.Contains(t, logs.String(), lostSub.ID.String())
	require.Contains(t, logs.String(), `key \"k9\"`)
	require.NotContains(t, logs.String(), lost.secret)

	// The readable subscriber's delivery is there and verifies.
	tasks, err := st.ListTasks(ctx, store.TaskFilter{TaskTypes: []string{webhooks.TaskTypeWebhookDelivery}})
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	require.Contains(t, string(tasks[0].Inputs), goodSub.ID.String())
	require.NoError(t, deliverOnce(t, h, goodSub.ID))
	_, valid := good.counts()
	require.Equal(t, 1, valid)
	calls, _ := lost.counts()
	require.Zero(t, calls)

	// Listing shows both, the unreadable one marked; the count is what
	// the metric wf_webhook_secrets_unreadable reports.
	subs, err := st.ListWebhookSubscribers(ctx)
	require.NoError(t, err)
	require.Len(t, subs, 2)
	require.ErrorContains(t, subs[0].Unreadable, `key "k9"`)
	require.Empty(t, subs[0].Secret)
	require.NoError(t, subs[1].Unreadable)
	n, err := st.CountUnreadableWebhookSecrets(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// TestBadURLKeepsCredentialsOut: a subscriber URL that Go cannot parse (the
// table checks only its scheme) fails the delivery for good, and the task's
// error names the subscriber, not the URL and the password it carries.
func TestBadURLKeepsCredentialsOut(t *testing.T) {
	t.Parallel()
	set := eventSpecs(t)
	st := store.New(dbtest.NewPool(t))
	ctx := context.Background()
	h, err := webhooks.New(webhooks.Deps{Store: st, Client: client.New(st, set)})
	require.NoError(t, err)
	s, err := st.InsertWebhookSubscriber(ctx, store.NewWebhookSubscriber{
		URL: "https://hook:hunter2@exa mple.com/in", Secret: "s", EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)
	err = deliverOnce(t, h, s.ID)
	require.Error(t, err)
	require.True(t, wftype.IsPermanent(err), "%v", err)
	require.NotContains(t, err.Error(), "hunter2")
	require.Contains(t, err.Error(), s.ID.String())
}
