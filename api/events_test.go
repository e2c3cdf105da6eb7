package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEventsAndDeadLetters(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)

	res := b.do("POST", "/events", tokClient, map[string]any{
		"event_type": "survey.updated", "scope": "ASSET", "schema_name": "s_cat_a", "payload": map[string]any{"asset_id": "A1"}, "dedup_key": "asset:A1",
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	ev := res.json(t)
	require.Equal(t, "PENDING", ev["status"])
	require.Equal(t, false, ev["deduplicated"])
	id := ev["event_id"].(string)

	b.unchanged(func() {
		res = b.do("POST", "/events", tokClientLimited, map[string]any{"event_type": "survey.updated", "schema_name": "s_cat_a", "dedup_key": "asset:A1"})
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, true, res.json(t)["deduplicated"])
		require.Equal(t, id, res.json(t)["event_id"])
	})

	res = b.do("POST", "/events", tokAdmin, map[string]any{"event_type": "platform.ping"})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Equal(t, "system", res.json(t)["schema_name"])

	// Two events dead-letter (as the consumer does after its retries).
	_, err := b.pool.Exec(b.ctx, `UPDATE tasks.events SET status = 'DEAD_LETTER', dead_lettered_at = now(), attempts = 5, error = 'boom'`)
	require.NoError(t, err)
	page := b.do("GET", "/admin/dead-letters?kind=events&limit=1", tokAdmin, nil).json(t)
	require.Equal(t, "events", page["kind"])
	require.Len(t, page["items"], 1)
	next := page["next_cursor"].(string)
	page2 := b.do("GET", "/admin/dead-letters?kind=events&limit=1&cursor="+url.QueryEscape(next), tokAdmin, nil).json(t)
	require.Len(t, page2["items"], 1)
	require.NotEqual(t, page["items"], page2["items"])
	b.unchanged(func() {
		res = b.do("GET", "/admin/dead-letters?kind=tasks&cursor="+url.QueryEscape(next), tokAdmin, nil)
		require.Equal(t, http.StatusBadRequest, res.status, "a cursor of another list")
	})

	// Requeue: back to PENDING, the dedup key taken back.
	res = b.do("POST", "/admin/events/"+id+"/requeue", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	ev = res.json(t)
	require.Equal(t, "PENDING", ev["status"])
	require.Equal(t, float64(0), ev["attempts"])
	require.Nil(t, ev["error"])
	var holder string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT event_id::text FROM tasks.event_dedup WHERE dedup_key = 'asset:A1'`).Scan(&holder))
	require.Equal(t, id, holder)
	b.unchanged(func() {
		b.requireAnswers(t,
			requestCase{"Pending", "POST", "/admin/events/" + id + "/requeue", tokAdmin, nil, http.StatusConflict, nil},
			requestCase{"Unknown", "POST", "/admin/events/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/requeue", tokAdmin, nil, http.StatusNotFound, nil},
			requestCase{"BadID", "POST", "/admin/events/nope/requeue", tokAdmin, nil, http.StatusBadRequest, nil})
	})
}

func TestEventsBadInput(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	cases := []requestCase{
		{"MissingType", "POST", "/events", tokClient, map[string]any{"payload": map[string]any{}}, 400, nil},
		{"BadType", "POST", "/events", tokClient, map[string]any{"event_type": "Catalog Deleted"}, 400, nil},
		{"OwnedType", "POST", "/events", tokClient, map[string]any{"event_type": "catalog.deleted"}, 403, nil},
		{"OwnedTypeAdmin", "POST", "/events", tokAdmin, map[string]any{"event_type": "task.failed"}, 403, nil},
		{"SQLType", "POST", "/events", tokClient, map[string]any{"event_type": "x'); DROP TABLE tasks.events; --"}, 400, nil},
		{"BadScope", "POST", "/events", tokClient, map[string]any{"event_type": "a.b", "scope": "GALAXY"}, 400, nil},
		{"PayloadNotObject", "POST", "/events", tokClient, map[string]any{"event_type": "a.b", "payload": "x"}, 400, nil},
		{"UnknownField", "POST", "/events", tokClient, map[string]any{"event_type": "a.b", "priority": 1}, 400, nil},
		{"LongDedup", "POST", "/events", tokClient, map[string]any{"event_type": "a.b", "dedup_key": strings.Repeat("d", 513)}, 400, nil},
		{"UnknownTenant", "POST", "/events", tokClient, map[string]any{"event_type": "a.b", "schema_name": "s_nope"}, 404, nil},
		{"OtherTenant", "POST", "/events", tokClientLimited, map[string]any{"event_type": "a.b", "schema_name": "s_cat_b"}, 404, nil},
		{"LimitedSystem", "POST", "/events", tokClientLimited, map[string]any{"event_type": "a.b"}, 404, nil},
		{"Worker", "POST", "/events", tokWorker, map[string]any{"event_type": "a.b"}, 403, nil},
		{"NoToken", "POST", "/events", "", map[string]any{"event_type": "a.b"}, 401, nil},
		{"DeadLettersKind", "GET", "/admin/dead-letters?kind=jobs", tokAdmin, nil, 400, nil},
	}
	b.requireUnchanged(t, cases)
}
