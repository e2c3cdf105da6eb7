package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestLeaderHearsTheLegacyEventsChannel: on the default channels, the
// leader wakes its event consumer for a notification on the outbox's new
// channel (wf_events) and on its old one (dynastore_events_channel), which
// instances of an earlier wf still notify during a rolling upgrade.
func TestLeaderHearsTheLegacyEventsChannel(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	inst := newInstance(t, url, "a", nil, time.Hour) // no sweep: only notifications wake it
	got := make(chan string, 16)
	inst.bus.Subscribe(signalbus.EventQueued, func(payload string) {
		if payload != "" { // a sweep's wake-up has none
			got <- payload
		}
	})
	inst.run(t)
	require.Eventually(t, inst.elector.IsLeader, 30*time.Second, 10*time.Millisecond)
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	for _, ch := range []string{store.DefaultChannels.Events, store.LegacyEventsChannel} {
		// The leader may still be subscribing: notify until it hears.
		require.Eventually(t, func() bool {
			_, err := conn.Exec(context.Background(), `SELECT pg_notify($1, $1)`, ch)
			require.NoError(t, err)
			select {
			case p := <-got:
				return p == ch
			case <-time.After(200 * time.Millisecond):
				return false
			}
		}, 30*time.Second, 10*time.Millisecond, ch)
	}
}
