package search_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/search"
	"github.com/wfhq/wf/internal/esfake"
	"github.com/wfhq/wf/internal/livetest"
)

// esBackend is the Elasticsearch a contract runs against: esfake
// (fakeES) or a real cluster (liveES, under make test-live). The contract
// reads both through the REST API only (GET _mapping, GET _doc, HEAD).
type esBackend struct {
	settings search.Settings
	// fake is the in-process server, nil on a live cluster: the tests that
	// inject faults use it, and only they.
	fake *esfake.Server
}

func fakeES(t *testing.T) esBackend {
	t.Helper()
	es := esfake.New()
	t.Cleanup(es.Close)
	return esBackend{settings: search.Settings{Addresses: []string{es.URL}}, fake: es}
}

// liveES is the cluster livetest.RequireES names, with index names unique
// to the run (the contract's bundle deletes them when the test ends).
func liveES(t *testing.T) esBackend {
	t.Helper()
	live := livetest.RequireES(t)
	return esBackend{settings: search.Settings{Addresses: live.Addresses, APIKey: live.APIKey, Username: live.Username,
		Password: live.Password, IndexTemplate: livetest.Name("wft") + "-{schema}-{collection}"}}
}

// bulkCounter counts the _bulk requests that pass through it.
type bulkCounter struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *bulkCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/_bulk") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// inspector reads an index through the REST API, as an operator would.
type inspector struct {
	es *elasticsearch.Client
}

func newInspector(t *testing.T, s search.Settings) inspector {
	t.Helper()
	es, err := elasticsearch.NewClient(elasticsearch.Config{Addresses: s.Addresses, APIKey: s.APIKey, Username: s.Username, Password: s.Password})
	require.NoError(t, err)
	return inspector{es: es}
}

// get sends a GET or HEAD and decodes a JSON answer; it returns the status.
func (in inspector) get(t *testing.T, method, path string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, path, nil)
	require.NoError(t, err)
	res, err := in.es.Perform(req)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var m map[string]any
	if len(raw) > 0 && method != http.MethodHead {
		require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	}
	return res.StatusCode, m
}

// exists says whether the index exists.
func (in inspector) exists(t *testing.T, index string) bool {
	status, _ := in.get(t, http.MethodHead, "/"+index)
	return status == http.StatusOK
}

// mapping returns the index's mapping (its "mappings" object).
func (in inspector) mapping(t *testing.T, index string) map[string]any {
	status, m := in.get(t, http.MethodGet, "/"+index+"/_mapping")
	require.Equal(t, http.StatusOK, status, m)
	return m[index].(map[string]any)["mappings"].(map[string]any)
}

// doc returns a document's source, nil when it does not exist.
func (in inspector) doc(t *testing.T, index, id string) map[string]any {
	status, m := in.get(t, http.MethodGet, "/"+index+"/_doc/"+id)
	if status == http.StatusNotFound {
		return nil
	}
	require.Equal(t, http.StatusOK, status, m)
	return m["_source"].(map[string]any)
}

// deleteIndex removes an index if it exists (a live run's cleanup).
func (in inspector) deleteIndex(t *testing.T, index string) {
	res, err := in.es.Indices.Delete([]string{index})
	if err != nil {
		t.Errorf("live cleanup: error deleting index %s: %v", index, err)
		return
	}
	_ = res.Body.Close()
	if res.IsError() && res.StatusCode != http.StatusNotFound {
		t.Errorf("live cleanup: error deleting index %s: %s", index, res.Status())
	}
}
