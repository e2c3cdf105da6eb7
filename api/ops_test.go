package api_test

import (
	"encoding/base64"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/secretbox"
)

func TestOperations(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("Healthz", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		res := b.do("GET", "/healthz", "", nil)
		require.Equal(t, http.StatusOK, res.status)
		require.Equal(t, "ok", res.json(t)["status"])
		require.Equal(t, runtime.Version(), res.json(t)["go_version"]) // and version, commit: checked by the contract
	})

	t.Run("Readyz", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		res := b.do("GET", "/readyz", "", nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		m := res.json(t)
		require.Equal(t, "ready", m["status"])
		mig := m["migrations"].(map[string]any)
		require.Equal(t, mig["latest"], mig["current"])
	})

	t.Run("OpenAPI", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		res := b.do("GET", "/openapi.json", "", nil)
		require.Equal(t, http.StatusOK, res.status)
		require.Equal(t, "3.1.0", res.json(t)["openapi"])
	})

	t.Run("UnknownRoute", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		res := b.do("GET", "/nope", tokAdmin, nil)
		require.Equal(t, http.StatusNotFound, res.status)
		res = b.do("GET", "/tasks/", tokAdmin, nil)
		require.Equal(t, http.StatusNotFound, res.status)
	})

	t.Run("MethodNotAllowed", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		res := b.do("PUT", "/tasks", tokAdmin, nil)
		require.Equal(t, http.StatusMethodNotAllowed, res.status)
		require.Contains(t, res.header.Get("Allow"), "POST")
	})

	t.Run("PathTraversal", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		b.unchanged(func() {
			for _, p := range []string{
				"/ingestion/../admin/dead-letters",
				"/ingestion/a/..%2f..%2fadmin",
				"/tasks/%2e%2e/admin",
				"/catalogs/a%2Fb",
				"/catalogs//x",
				"/catalogs/./x",
				"/catalogs/x%5c..%5cy",
			} {
				res := b.do("GET", p, tokAdmin, nil)
				require.Equal(t, http.StatusBadRequest, res.status, p)
				require.Contains(t, string(res.body), "canonical", p)
			}
		})
	})

	t.Run("Auth", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		b.unchanged(func() {
			res := b.do("GET", "/tasks", "", nil)
			require.Equal(t, http.StatusUnauthorized, res.status)
			require.Contains(t, res.header.Get("WWW-Authenticate"), "Bearer")

			res = b.do("GET", "/tasks", "not-a-token", nil)
			require.Equal(t, http.StatusUnauthorized, res.status)
			require.Contains(t, res.header.Get("WWW-Authenticate"), "invalid_token")

			res = b.doHeaders("GET", "/tasks", "", nil, http.Header{"Authorization": {"Basic " + tokAdmin}})
			require.Equal(t, http.StatusUnauthorized, res.status)

			// Lower-case scheme is accepted (RFC 9110 schemes are case-insensitive).
			res = b.doHeaders("GET", "/tasks", "", nil, http.Header{"Authorization": {"bearer " + tokAdmin}})
			require.Equal(t, http.StatusOK, res.status)

			for _, tok := range []string{tokClient, tokClientLimited, tokWorker} {
				res = b.do("GET", "/admin/dead-letters", tok, nil)
				require.Equal(t, http.StatusForbidden, res.status)
				res = b.do("POST", "/admin/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/requeue", tok, nil)
				require.Equal(t, http.StatusForbidden, res.status)
			}
			// Workers may not create; clients may not report as workers.
			res = b.do("POST", "/tasks", tokWorker, map[string]any{"task_type": "noop"})
			require.Equal(t, http.StatusForbidden, res.status)
			res = b.do("POST", "/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/complete", tokClient, map[string]any{"owner_id": "x"})
			require.Equal(t, http.StatusForbidden, res.status)
			res = b.do("POST", "/catalogs", tokWorker, map[string]any{"catalog_id": "w"})
			require.Equal(t, http.StatusForbidden, res.status)
		})
	})

	t.Run("OversizeHeaderlessBody", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		b.unchanged(func() {
			res := b.do("POST", "/catalogs", tokAdmin, `{"catalog_id": "x", "title": "`+strings.Repeat("a", 2<<20)+`"}`)
			require.Equal(t, http.StatusRequestEntityTooLarge, res.status)
		})
	})
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Some live tasks for the depth gauge.
	b.createCatalog("metrics-cat", "roads")
	for range 3 {
		res := b.do("POST", "/tasks", tokAdmin, map[string]any{"task_type": "noop"})
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	}
	// A webhook subscriber whose secret is sealed under a key this wf does
	// not have: counted, since the fan-out skips it.
	lost, err := secretbox.Parse("k9:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("9", 32))))
	require.NoError(t, err)
	_, err = store.New(b.pool).WithSecrets(lost).InsertWebhookSubscriber(b.ctx, store.NewWebhookSubscriber{
		URL: "https://hooks.example.com/x", Secret: "a-secret-under-a-lost-key", EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)
	res := b.do("GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, res.status)
	text := string(res.body)
	require.Contains(t, text, `wf_queue_depth{schema_name="system",status="PENDING",task_type="noop"} 3`)
	require.Contains(t, text, `wf_queue_depth{schema_name="system",status="ACTIVE",task_type="noop"} 0`)
	require.Contains(t, text, `wf_queue_depth_up 1`)
	require.Contains(t, text, `wf_leader 1`)
	require.Contains(t, text, `wf_outbox_events{status="PENDING"}`)
	require.Contains(t, text, "\nwf_webhook_secrets_unreadable 1\n")
	require.Contains(t, text, `wf_build_info{`)
	require.Contains(t, text, `wf_http_requests_total{code="202",route="POST /tasks"}`)
	require.Contains(t, text, "go_goroutines")
	require.Regexp(t, `(?m)^wf_build_info\{goversion="go[^"]+",revision="[^"]+",version="[^"]+"\} 1$`, text)
}
