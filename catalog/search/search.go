// Package search is the "elasticsearch" builtin handler and its drop: it
// keeps one Elasticsearch index per tenant and collection up to date with
// the collection's current features, through the official client
// (github.com/elastic/go-elasticsearch/v8) and its bulk indexer.
//
// A run sends only the features written since the previous one: the
// index's watermark (catalog.search_indexes) is the latest feature write it
// has indexed. Each feature is one document, its geoid the document id,
// indexed with external versioning by its transaction time, so two runs
// that overlap can never put an older version over a newer one. A feature
// with no current version any more has its document deleted. Every
// document's outcome is reported through the per-record envelope;
// documents Elasticsearch refuses (a property that does not fit its mapped
// type) are reported as failed and the run goes on; 429 and 5xx answers,
// to a whole _bulk request or to items of it, are retried with exponential
// backoff, and a run that still cannot send everything fails for a retry
// without moving the watermark.
//
// The index is created on first use with a mapping built from the
// collection's layer_config.fields (see Mapping); the elasticsearch_drop
// handler deletes it when its collection or catalog is deleted.
package search

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/elastic/go-elasticsearch/v8/esutil"

	"github.com/wfhq/wf/catalog/geom"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// Handler names.
const (
	// HandlerName indexes a collection.
	HandlerName = "elasticsearch"
	// DropHandlerName deletes the indexes of deleted collections.
	DropHandlerName = "elasticsearch_drop"
)

// Settings are the cluster and the indexing limits (config.Elasticsearch).
type Settings struct {
	// Addresses are the nodes' URLs; empty means no cluster is configured:
	// the handlers are then marked unserved where they are registered
	// (catalog/builtins), and fail for good if called all the same.
	Addresses []string
	// Username, Password and APIKey authenticate (APIKey wins).
	Username, Password, APIKey string
	// IndexTemplate names an index from {schema} and {collection}; default
	// "wf-{schema}-{collection}".
	IndexTemplate string
	// FlushBytes is the size of one _bulk request; default 5 MiB.
	FlushBytes int
	// Workers is how many _bulk requests run at once; default 2.
	Workers int
	// MaxRetries bounds the retries of a request or an item answered 429 or
	// 5xx; default 5 (negative: none).
	MaxRetries int
	// Backoff is the wait before retry n (from 1); default exponential from
	// 200ms, capped at 30s, with jitter.
	Backoff func(n int) time.Duration
	// Transport carries the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
}

// Config configures the handlers.
type Config struct {
	// Store reads the features and keeps the watermarks. Required.
	Store *store.Store
	// Settings are the cluster's.
	Settings Settings
	// BatchSize is how many rows one database fetch reads; default 1000.
	BatchSize int
}

// Handler runs the elasticsearch and elasticsearch_drop tasks; it is safe
// for concurrent use.
type Handler struct {
	cfg Config
	es  *elasticsearch.Client // nil when no cluster is configured
}

// New checks cfg and builds the client (which connects lazily).
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("error configuring the search handlers: Store is required")
	}
	s := &cfg.Settings
	s.IndexTemplate = cmp.Or(s.IndexTemplate, "wf-{schema}-{collection}")
	s.FlushBytes = cmp.Or(s.FlushBytes, 5<<20)
	s.Workers = cmp.Or(s.Workers, 2)
	switch {
	case s.MaxRetries == 0:
		s.MaxRetries = 5
	case s.MaxRetries < 0:
		s.MaxRetries = 0
	}
	if s.Backoff == nil {
		s.Backoff = DefaultBackoff
	}
	cfg.BatchSize = cmp.Or(cfg.BatchSize, 1000)
	if !strings.Contains(s.IndexTemplate, "{schema}") || !strings.Contains(s.IndexTemplate, "{collection}") {
		return nil, fmt.Errorf("error configuring the search handlers: the index template %q must contain {schema} and {collection}", s.IndexTemplate)
	}
	h := &Handler{cfg: cfg}
	if len(s.Addresses) == 0 {
		return h, nil
	}
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses: s.Addresses, Username: s.Username, Password: s.Password, APIKey: s.APIKey,
		Transport: s.Transport,
		// The transport retries a whole request answered 429 or 5xx; items
		// of a _bulk answer are retried by run.
		RetryOnStatus: []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
		MaxRetries:    s.MaxRetries,
		DisableRetry:  s.MaxRetries == 0,
		RetryBackoff:  s.Backoff,
	})
	if err != nil {
		return nil, fmt.Errorf("error configuring the Elasticsearch client: %w", err)
	}
	h.es = es
	return h, nil
}

// DefaultBackoff waits 200ms × 2^(n-1), at most 30s, ±20%.
func DefaultBackoff(n int) time.Duration {
	d := min(200*time.Millisecond<<min(n-1, 10), 30*time.Second)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// IndexName returns the index of a tenant's collection.
func (h *Handler) IndexName(schema, collection string) string {
	return strings.NewReplacer("{schema}", schema, "{collection}", collection).Replace(h.cfg.Settings.IndexTemplate)
}

// Inputs are an elasticsearch task's inputs.
type Inputs struct {
	CatalogID    string `json:"catalog_id"`
	CollectionID string `json:"collection_id"`
	// Full reindexes every current feature, whatever the watermark says.
	Full bool `json:"full,omitempty"`
}

// Outputs are an elasticsearch task's outputs.
type Outputs struct {
	Index string `json:"index,omitempty"`
	// Full says the run sent every current feature (first run, a
	// recreated index, or full: true).
	Full bool `json:"full"`
	// Indexed and Deleted count documents written and deleted; Failed
	// those Elasticsearch refused (reported one by one).
	Indexed int64 `json:"indexed"`
	Deleted int64 `json:"deleted"`
	Failed  int64 `json:"failed"`
	// Documents is the index's _count after the run.
	Documents int64 `json:"documents"`
	// Watermark is the latest feature write indexed.
	Watermark *time.Time `json:"watermark,omitempty"`
}

// NotConfigured says why the search handlers cannot run without a cluster:
// the reason the builtins give builtin.Registry.MarkUnserved, and the
// permanent error of a handler called all the same.
const NotConfigured = "elasticsearch.addresses is not set (WF_ELASTICSEARCH_ADDRESSES)"

// errNotConfigured fails a search task on a Handler without a cluster: it
// never passes for an indexing.
var errNotConfigured = wftype.Permanent(errors.New("no Elasticsearch cluster is configured: " + NotConfigured))

// Configured says whether a cluster is configured (Settings.Addresses):
// without one the handlers are marked unserved where they are registered.
func (h *Handler) Configured() bool { return h.es != nil }

// Index is the elasticsearch builtin handler.
func (h *Handler) Index(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	var in Inputs
	if err := builtin.ReadInputs(task.Inputs, &in, "the "+HandlerName+" inputs"); err != nil {
		return nil, err
	}
	if in.CatalogID == "" || in.CollectionID == "" {
		return nil, wftype.Permanent(errors.New(`invalid elasticsearch inputs: "catalog_id" and "collection_id" are required`))
	}
	if h.es == nil {
		return nil, errNotConfigured
	}
	table, err := h.cfg.Store.TaskFeatureTable(ctx, task.SchemaName, in.CatalogID, in.CollectionID, "indexing")
	if err != nil {
		return nil, err
	}
	col, err := h.cfg.Store.GetCollection(ctx, in.CatalogID, in.CollectionID)
	if err != nil {
		return nil, err
	}
	mapping, err := Mapping(col.LayerConfig)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error mapping %s/%s: %w", in.CatalogID, in.CollectionID, err))
	}
	name := h.IndexName(table.Schema, table.Collection)
	created, err := h.ensureIndex(ctx, name, mapping)
	if err != nil {
		return nil, err
	}
	state, found, err := h.cfg.Store.GetSearchIndex(ctx, name)
	if err != nil {
		return nil, err
	}
	out := Outputs{Index: name, Full: in.Full || created || !found || state.Watermark == nil}
	var since *time.Time
	if !out.Full {
		since = state.Watermark
	}
	r := &run{h: h, rep: rep, index: name}
	watermark, err := r.send(ctx, table, since)
	if err != nil {
		return nil, err
	}
	out.Indexed, out.Deleted, out.Failed = r.indexed, r.deleted, r.failed
	if err := h.refresh(ctx, name); err != nil {
		return nil, err
	}
	if out.Documents, err = h.count(ctx, name); err != nil {
		return nil, err
	}
	out.Watermark = watermark
	if err := h.cfg.Store.PutSearchIndex(ctx, store.SearchIndex{Name: name, CatalogID: in.CatalogID,
		CollectionID: in.CollectionID, SchemaName: table.Schema, Watermark: watermark, Documents: out.Documents}); err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// DropInputs are an elasticsearch_drop task's inputs: a deleted catalog's
// tenant schema and the collections whose indexes go.
type DropInputs struct {
	CatalogID   string   `json:"catalog_id"`
	SchemaName  string   `json:"schema_name"`
	Collections []string `json:"collections"`
}

// DropOutputs are an elasticsearch_drop task's outputs.
type DropOutputs struct {
	// Deleted are the indexes deleted; Absent those that did not exist.
	Deleted []string `json:"deleted"`
	Absent  []string `json:"absent"`
}

// Drop is the elasticsearch_drop builtin handler: it deletes the indexes
// of deleted collections and forgets their watermarks. Deleting an index
// that does not exist is no error, so a retry finishes the job.
func (h *Handler) Drop(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in DropInputs
	if err := builtin.ReadInputs(task.Inputs, &in, "the "+DropHandlerName+" inputs"); err != nil {
		return nil, err
	}
	if h.es == nil {
		return nil, errNotConfigured
	}
	out := DropOutputs{Deleted: []string{}, Absent: []string{}}
	var names []string
	for _, c := range in.Collections {
		t, err := store.NewFeatureTable(in.SchemaName, c)
		if err != nil {
			return nil, wftype.Permanent(fmt.Errorf("error dropping the index of %s/%s: %w", in.CatalogID, c, err))
		}
		names = append(names, h.IndexName(t.Schema, t.Collection))
	}
	for _, name := range names {
		res, err := h.es.Indices.Delete([]string{name}, h.es.Indices.Delete.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("error deleting index %s: %w", name, err)
		}
		status, body := drain(res)
		switch {
		case status == http.StatusNotFound:
			out.Absent = append(out.Absent, name)
		case res.IsError():
			return nil, statusError("deleting index "+name, status, body)
		default:
			out.Deleted = append(out.Deleted, name)
		}
		if err := h.cfg.Store.DeleteSearchIndex(ctx, name); err != nil {
			return nil, err
		}
	}
	return json.Marshal(out)
}

// ensureIndex creates the index with its mapping when it does not exist,
// and says whether it did. Two runs creating it at once are both fine.
func (h *Handler) ensureIndex(ctx context.Context, name string, mapping map[string]any) (bool, error) {
	res, err := h.es.Indices.Exists([]string{name}, h.es.Indices.Exists.WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("error checking index %s: %w", name, err)
	}
	status, body := drain(res)
	switch {
	case status == http.StatusOK:
		return false, nil
	case status != http.StatusNotFound:
		return false, statusError("checking index "+name, status, body)
	}
	spec, err := json.Marshal(map[string]any{"mappings": mapping})
	if err != nil {
		return false, fmt.Errorf("error encoding the mapping of %s: %w", name, err)
	}
	res, err = h.es.Indices.Create(name, h.es.Indices.Create.WithContext(ctx), h.es.Indices.Create.WithBody(bytes.NewReader(spec)))
	if err != nil {
		return false, fmt.Errorf("error creating index %s: %w", name, err)
	}
	status, body = drain(res)
	switch {
	case status == http.StatusBadRequest && bytes.Contains(body, []byte("resource_already_exists_exception")):
		return false, nil // another run created it just now
	case res.IsError():
		err := statusError("creating index "+name, status, body)
		if status == http.StatusBadRequest {
			return false, wftype.Permanent(err) // an invalid name or mapping
		}
		return false, err
	}
	return true, nil
}

// refresh makes the run's writes visible to searches and _count.
func (h *Handler) refresh(ctx context.Context, name string) error {
	res, err := h.es.Indices.Refresh(h.es.Indices.Refresh.WithContext(ctx), h.es.Indices.Refresh.WithIndex(name))
	if err != nil {
		return fmt.Errorf("error refreshing index %s: %w", name, err)
	}
	if status, body := drain(res); res.IsError() {
		return statusError("refreshing index "+name, status, body)
	}
	return nil
}

// count returns the index's document count.
func (h *Handler) count(ctx context.Context, name string) (int64, error) {
	res, err := h.es.Count(h.es.Count.WithContext(ctx), h.es.Count.WithIndex(name))
	if err != nil {
		return 0, fmt.Errorf("error counting index %s: %w", name, err)
	}
	status, body := drain(res)
	if res.IsError() {
		return 0, statusError("counting index "+name, status, body)
	}
	var c struct {
		Count int64 `json:"count"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return 0, fmt.Errorf("error reading the count of index %s: %w", name, err)
	}
	return c.Count, nil
}

// drain reads and closes a response's body (at most 1 MiB of it).
func drain(res *esapi.Response) (int, []byte) {
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, body
}

// statusError words an Elasticsearch error answer: its type and reason.
func statusError(doing string, status int, body []byte) error {
	var e struct {
		Error struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Type != "" {
		return fmt.Errorf("error %s: Elasticsearch answered %d %s: %s", doing, status, e.Error.Type, e.Error.Reason)
	}
	return fmt.Errorf("error %s: Elasticsearch answered %d", doing, status)
}

// run is one indexing run's bulk traffic and counts.
type run struct {
	h     *Handler
	rep   reporters.Reporter
	index string

	mu                       sync.Mutex
	indexed, deleted, failed int64
	retry                    []*item // items answered 429 or 5xx, for the next round
	reportErr                error
}

// item is one document action, kept for a retry.
type item struct {
	action     string // index or delete
	id         string
	externalID string
	version    int64
	body       []byte
}

// send streams the changes since since (all current features when nil)
// to the index and retries what was answered 429 or 5xx; it returns the
// watermark of what it sent.
func (r *run) send(ctx context.Context, t store.FeatureTable, since *time.Time) (*time.Time, error) {
	bi, err := r.indexer()
	if err != nil {
		return nil, err
	}
	_, watermark, scanErr := r.h.cfg.Store.ScanFeatureChanges(ctx, t, since, r.h.cfg.BatchSize, func(c *store.FeatureChange) error {
		it, err := newItem(c)
		if err != nil {
			return err
		}
		return r.add(ctx, bi, it)
	})
	closeErr := bi.Close(context.WithoutCancel(ctx))
	if err := errors.Join(scanErr, closeErr, r.reportError()); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		r.mu.Lock()
		pending := r.retry
		r.retry = nil
		r.mu.Unlock()
		if len(pending) == 0 {
			return watermark, nil
		}
		if attempt > r.h.cfg.Settings.MaxRetries {
			return nil, fmt.Errorf("error indexing into %s: %d documents were still refused with 429 or 5xx after %d retries (first: %s)",
				r.index, len(pending), r.h.cfg.Settings.MaxRetries, pending[0].externalID)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(r.h.cfg.Settings.Backoff(attempt)):
		}
		bi, err := r.indexer()
		if err != nil {
			return nil, err
		}
		var addErr error
		for _, it := range pending {
			if addErr = r.add(ctx, bi, it); addErr != nil {
				break
			}
		}
		if err := errors.Join(addErr, bi.Close(context.WithoutCancel(ctx)), r.reportError()); err != nil {
			return nil, err
		}
	}
}

// indexer returns a bulk indexer on the run's index.
func (r *run) indexer() (esutil.BulkIndexer, error) {
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client: r.h.es, Index: r.index,
		NumWorkers: r.h.cfg.Settings.Workers, FlushBytes: r.h.cfg.Settings.FlushBytes,
		FlushInterval: time.Hour, // flushed by size and by Close, never by time
	})
	if err != nil {
		return nil, fmt.Errorf("error creating the bulk indexer: %w", err)
	}
	return bi, nil
}

// newItem turns a change into a document action: index the current
// version, or delete a feature that has none. The external version is the
// change's time in microseconds, so an older run's write never wins.
func newItem(c *store.FeatureChange) (*item, error) {
	it := &item{id: c.GeoID.String(), externalID: c.ExternalID, version: c.TransactionTime.UnixMicro()}
	if !c.Current {
		it.action = "delete"
		if c.DeletedAt != nil && c.DeletedAt.After(c.TransactionTime) {
			it.version = c.DeletedAt.UnixMicro()
		}
		it.version++ // after the version it closes
		return it, nil
	}
	it.action = "index"
	geometry, err := geom.GeoJSONFromWKB(nil, c.WKB)
	if err != nil {
		return nil, fmt.Errorf("error encoding feature %s: %w", c.ExternalID, err)
	}
	doc := struct {
		GeoID           string          `json:"geoid"`
		ExternalID      string          `json:"external_id"`
		AssetID         *string         `json:"asset_id,omitempty"`
		Geometry        json.RawMessage `json:"geometry"`
		Properties      json.RawMessage `json:"properties"`
		ValidFrom       time.Time       `json:"valid_from"`
		TransactionTime time.Time       `json:"transaction_time"`
	}{it.id, c.ExternalID, c.AssetID, geometry, c.Properties, c.ValidFrom, c.TransactionTime}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("error encoding feature %s: %w", c.ExternalID, err)
	}
	it.body = body
	return it, nil
}

// add queues one item with its outcome callbacks.
func (r *run) add(ctx context.Context, bi esutil.BulkIndexer, it *item) error {
	version := it.version
	bit := esutil.BulkIndexerItem{
		Action: it.action, DocumentID: it.id, Version: &version, VersionType: "external",
		OnSuccess: func(ctx context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem) {
			r.succeeded(ctx, it)
		},
		OnFailure: func(ctx context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
			r.refused(ctx, it, res, err)
		},
	}
	if it.body != nil {
		bit.Body = bytes.NewReader(it.body)
	}
	if err := bi.Add(ctx, bit); err != nil {
		return fmt.Errorf("error queueing feature %s: %w", it.externalID, err)
	}
	return nil
}

// record is the envelope record of an item.
func (it *item) record() reporters.Record {
	return reporters.Record{Type: "Feature", ID: it.id,
		System: map[string]any{reporters.SystemGeoID: it.id, reporters.SystemExternalID: it.externalID}}
}

// succeeded counts and reports a written or deleted document.
func (r *run) succeeded(ctx context.Context, it *item) {
	r.mu.Lock()
	if it.action == "delete" {
		r.deleted++
	} else {
		r.indexed++
	}
	r.mu.Unlock()
	r.report(ctx, reporters.Success(it.record()))
}

// refused sorts out an item that did not succeed: a version conflict
// means a newer version is indexed already, a delete of a missing document
// has nothing to do, 429, 5xx and request errors are retried, the rest
// (a document that does not fit the mapping) is reported as failed.
func (r *run) refused(ctx context.Context, it *item, res esutil.BulkIndexerResponseItem, err error) {
	switch {
	case err == nil && res.Status == http.StatusConflict,
		err == nil && it.action == "delete" && res.Status == http.StatusNotFound:
		r.succeeded(ctx, it)
	case err != nil || res.Status == http.StatusTooManyRequests || res.Status >= 500:
		r.mu.Lock()
		r.retry = append(r.retry, it)
		r.mu.Unlock()
	default:
		r.mu.Lock()
		r.failed++
		r.mu.Unlock()
		r.report(ctx, reporters.Failed(it.record(), fmt.Sprintf("Elasticsearch refused the document (%d %s): %s",
			res.Status, res.Error.Type, res.Error.Reason)))
	}
}

// report hands an envelope to the reporter, keeping its first error.
func (r *run) report(ctx context.Context, env reporters.Envelope) {
	if err := r.rep.Report(ctx, env); err != nil {
		r.mu.Lock()
		if r.reportErr == nil {
			r.reportErr = err
		}
		r.mu.Unlock()
	}
}

// reportError returns the first error of the reporter.
func (r *run) reportError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reportErr
}
