package webhooks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestBadURLKeepsCredentialsOut: a subscriber URL that Go cannot parse (the
// table checks only its scheme) fails the delivery for good, and the task's
// error names the subscriber, not the URL and the password it carries.
func TestBadURLKeepsCredentialsOut(t *testing.T) {
	t.Parallel()
	set, err := spec.Load(spec.Options{Builtins: webhooks.Names()}, "../../specs/events.yaml")
	require.NoError(t, err)
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
