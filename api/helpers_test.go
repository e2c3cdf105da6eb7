package api_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/catalog/search"
	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/metrics"
	"github.com/wfhq/wf/engine/readreplica"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/egress"
	"github.com/wfhq/wf/internal/esfake"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/gcsreporter"
	"github.com/wfhq/wf/reporters/standard"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/schemas"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// quietLogger drops the servers' and engines' logs.
var quietLogger = slog.New(slog.DiscardHandler)

// Plain tokens of the test server, by who holds them.
const (
	tokAdmin         = "admin-token-0123456789"
	tokClient        = "client-token-0123456789"
	tokClientLimited = "client-a-token-0123456789"
	tokClientB       = "client-b-token-0123456789"
	tokWorkerSleep   = "worker-sleep-token-0123456789"
	tokWorker        = "worker-token-0123456789"
	tokWorkerLimited = "worker-a-token-0123456789"
)

// testSpecs are task types for the tests, next to the shipped specs.
const testSpecs = `
kind: TaskType
name: sleep_sync_global
description: Sleeps inputs.duration in front of its caller; one at a time in the cluster.
execution_mode: SYNCHRONOUS
api: {create: [client, admin]}
handler: {builtin: sleep}
concurrency: {global: 1}
---
kind: TaskType
name: sleep_sync_local
description: Sleeps inputs.duration in front of its caller; one at a time per server.
execution_mode: SYNCHRONOUS
api: {create: [client, admin]}
handler: {builtin: sleep}
concurrency: {per_instance: 1}
---
kind: TaskType
name: sleep_sync_tenant
description: Sleeps inputs.duration in front of its caller; one at a time per tenant.
execution_mode: SYNCHRONOUS
scope: CATALOG
api: {create: [client, admin]}
handler: {builtin: sleep}
concurrency: {per_tenant: 1}
---
kind: TaskType
name: echo_sync_rate
description: Echoes its inputs in front of its caller; 2 starts per tenant an hour, 3 in all.
execution_mode: SYNCHRONOUS
scope: CATALOG
api: {create: [client, admin]}
handler: {builtin: echo}
rate_limit: {starts: 3, per_tenant: 2, interval: 1h}
---
kind: TaskType
name: echo_sync
description: Echoes its inputs back as outputs, in front of its caller.
execution_mode: SYNCHRONOUS
api: {create: [client, admin]}
handler: {builtin: echo}
inputs:
  type: object
  properties:
    word: {type: string}
    fail: {type: boolean}
---
kind: TaskType
name: tenant_job
description: A catalog-scoped job.
scope: CATALOG
handler: {builtin: noop}
max_retries: 1
backoff: {base: 1s, factor: 2, max: 1h, jitter: 0}
inputs:
  type: object
  additionalProperties: false
  properties:
    n: {type: integer, minimum: 0}
    name: {type: string, maxLength: 10}
dedup_key: 'string(inputs.name ?? "")'
`

// echo returns the task's inputs as its outputs; {"fail": true} fails.
func echo(_ context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in struct {
		Fail bool `json:"fail"`
	}
	_ = json.Unmarshal(task.Inputs, &in)
	if in.Fail {
		return nil, fmt.Errorf("echo asked to fail")
	}
	return task.Inputs, nil
}

// loopbackHTTP is an outbound client whose policy allow-lists loopback,
// where the tests' receivers listen (outbound.allow: [127.0.0.0/8]).
func loopbackHTTP(t *testing.T) *http.Client {
	p, err := egress.NewPolicy([]string{"127.0.0.0/8", "::1"})
	require.NoError(t, err)
	return p.Client(10 * time.Second)
}

// bundle is one test's server, database and helpers.
type bundle struct {
	t      *testing.T
	ctx    context.Context
	pool   *pgxpool.Pool
	store  *store.Store
	specs  *spec.Set
	server *api.Server
	http   *httptest.Server
	router routers.Router
	doc    *openapi3.T
	reg    *builtin.Registry
	// root is the one folder (files.local_roots) the feature handlers in
	// reg may read and write local files in: each tenant in its own folder
	// there (tenantDir).
	root string
	// files opens the files of tasks under root, as wf run's does.
	files *objio.Opener
	// es is the fake Elasticsearch the search handlers in reg index into.
	es *esfake.Server
	// tracer traces the API and the engines the test starts (nil: off).
	tracer trace.TracerProvider
	// reports is the server's report location (api.Config.ReportsURL): a
	// feature engine started with it as its report folder writes the
	// reports that GET /tasks/{task_id}/files/report serves.
	reports string
}

// tenantDir returns (and creates) the folder of tenant schema under the
// files root, where its tasks' local files are.
func (b *bundle) tenantDir(schema string) string {
	b.t.Helper()
	dir := filepath.Join(b.root, schema)
	require.NoError(b.t, os.MkdirAll(dir, 0o755))
	return dir
}

// in returns the bundle for a subtest: failures are reported on t.
func (b *bundle) in(t *testing.T) *bundle {
	cp := *b
	cp.t = t
	return &cp
}

// parallel runs fn as a parallel subtest of t named name, with the bundle
// for it (in).
func (b *bundle) parallel(t *testing.T, name string, fn func(t *testing.T, b *bundle)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		fn(t, b.in(t))
	})
}

// options tune setup.
type options struct {
	maxBody  int64
	registry func(*builtin.Registry)
	// gcp binds the gcp handlers (Store is set by setup).
	gcp gcp.Deps
	// storagePush, when set, builds the /hooks/gcs receiver on the test's store.
	storagePush func(*store.Store) *gcp.PushReceiver
	tracer      trace.TracerProvider
	// warehouses are the dwh_join connections (warehouse.connections).
	warehouses []config.WarehouseConnection
	// tileCache is tiles.cache_url, of tiles_preseed and the tile route
	// (default: a folder of the test's).
	tileCache string
	// specs are compiled with the shipped ones and testSpecs.
	specs string
	// pool, when set, is the database instead of a fresh one (a replica
	// test's primary); reads routes the reads that may lag.
	pool  *pgxpool.Pool
	reads *readreplica.Monitor
	// clock is the server's (default the wall clock).
	clock clock.Clock
}

// loadSpecs compiles the shipped specs plus testSpecs with reg's builtins
// and the catalog's (which bindCatalog adds to reg).
func loadSpecs(t *testing.T, reg *builtin.Registry, extra string) *spec.Set {
	t.Helper()
	sources, err := spec.ReadSources("../specs")
	require.NoError(t, err)
	sources = append(sources, spec.Source{Name: "test.yaml", Data: []byte(testSpecs)})
	if extra != "" {
		sources = append(sources, spec.Source{Name: "extra.yaml", Data: []byte(extra)})
	}
	names := append(append(append(reg.Names(), webhooks.Names()...), builtins.Names()...), gcp.Names()...)
	set, err := spec.Compile(sources, spec.Options{Builtins: names})
	require.NoError(t, err)
	return set
}

// bindCatalog registers in reg the catalog's handlers (the shipped specs
// name them: specs/events.yaml, specs/ingestion.yaml, specs/features.yaml,
// specs/gcp.yaml) bound to the database, as wf run, wf serve and wf exec
// bind them; local files are opened with files (limited to the bundle's
// root); the gcp handlers use cloud (no project: they provision nothing);
// the search handlers index into es; dwh_join reads the warehouses. With
// a tracer, as wf run's: the events the handlers emit and the deliveries
// the webhook fan-out enqueues stay in the run's trace. Names reg already
// holds keep their handlers.
func bindCatalog(t *testing.T, reg *builtin.Registry, pool *pgxpool.Pool, specs *spec.Set, files *objio.Opener, cloud gcp.Deps, es *esfake.Server,
	warehouses []config.WarehouseConnection, tileCache string, tracer trace.TracerProvider) {
	t.Helper()
	st := store.New(pool)
	em := events.NewEmitter(st)
	if tracer != nil {
		em = em.WithTracing()
	}
	cloud.Store, cloud.Logger = st, quietLogger
	gh, err := gcp.New(cloud)
	require.NoError(t, err)
	t.Cleanup(func() { _ = gh.Close() })
	_ = gh.Register(reg)
	features, err := builtins.New(builtins.Deps{Store: st, Objects: files, Logger: quietLogger,
		Search: search.Settings{Addresses: []string{es.URL}}, Warehouses: warehouses, Emitter: em, TileCacheURL: tileCache})
	require.NoError(t, err)
	hooks, err := webhooks.New(webhooks.Deps{Store: st, Client: client.New(st, specs).WithTracerProvider(tracer), Logger: quietLogger, HTTP: loopbackHTTP(t)})
	require.NoError(t, err)
	_ = features.Register(reg)
	_ = hooks.Register(reg)
}

// openAPI loads the contract once per test binary.
var openAPI = sync.OnceValues(func() (*openapi3.T, error) {
	b, err := schemas.Read(api.OpenAPIFile)
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

// setupTenants is setup with the two catalogs the tests' tokens are made
// for: cat-a (collection roads; the catalog of the limited tokens) and
// cat-b (collection rivers).
func setupTenants(t *testing.T, opts ...options) *bundle {
	t.Helper()
	b := setup(t, opts...)
	b.createCatalog("cat-a", "roads")
	b.createCatalog("cat-b", "rivers")
	return b
}

func setup(t *testing.T, opts ...options) *bundle {
	t.Helper()
	var o options
	if len(opts) > 0 {
		o = opts[0]
	}
	ctx := context.Background()
	pool := o.pool
	if pool == nil {
		pool = dbtest.NewPool(t)
	}
	reg := builtin.NewRegistry()
	require.NoError(t, reg.Register("echo", echo))
	if o.registry != nil {
		o.registry(reg)
	}
	specs := loadSpecs(t, reg, o.specs)
	root := t.TempDir()
	files := objio.New(objio.Config{LocalRoots: []string{root}, RootsHint: "set files.local_roots"})
	es := esfake.New()
	t.Cleanup(es.Close)
	tileCache := cmp.Or(o.tileCache, "file://"+filepath.ToSlash(t.TempDir()))
	reports := t.TempDir()
	bindCatalog(t, reg, pool, specs, files, o.gcp, es, o.warehouses, tileCache, o.tracer)
	var push *gcp.PushReceiver
	if o.storagePush != nil {
		push = o.storagePush(store.New(pool))
	}
	set, err := runnerset.Build(specs, runnerset.Options{Registry: reg, DefaultVisibilityTimeout: time.Minute})
	require.NoError(t, err)
	tokens := []config.Token{
		{Name: "admin", Role: config.RoleAdmin, TokenSHA256: config.HashToken(tokAdmin)},
		{Name: "client", Role: config.RoleClient, TokenSHA256: config.HashToken(tokClient)},
		{Name: "client-a", Role: config.RoleClient, Catalogs: []string{"cat-a"}, TokenSHA256: config.HashToken(tokClientLimited)},
		{Name: "client-b", Role: config.RoleClient, Catalogs: []string{"cat-b"}, TokenSHA256: config.HashToken(tokClientB)},
		{Name: "worker", Role: config.RoleWorker, TokenSHA256: config.HashToken(tokWorker)},
		{Name: "worker-a", Role: config.RoleWorker, Catalogs: []string{"cat-a"}, TokenSHA256: config.HashToken(tokWorkerLimited)},
		{Name: "worker-sleep", Role: config.RoleWorker, TaskTypes: []string{"sleep"}, TokenSHA256: config.HashToken(tokWorkerSleep)},
	}
	srv, err := api.New(api.Config{
		Pool: pool, Specs: specs, Client: client.New(store.New(pool), specs).WithFiles(files).WithTracerProvider(o.tracer), Tokens: tokens, HTTP: config.HTTP{MaxBodyBytes: o.maxBody},
		Owner: "api-test", Runners: set.Runners, Rules: set.Rules, Unserved: set.Unserved, Logger: quietLogger,
		Metrics: leaderMetrics(pool), TileCacheURL: tileCache, StoragePush: push, Files: files, ReportsURL: "file://" + reports,
		TracerProvider: o.tracer, Reads: o.reads, Clock: o.clock,
		// As wf serve's: the files root, and the other folders by name
		// (the tests' report folders are temporary folders).
		Folders: redact.NewFolders([]string{root}, map[string]string{os.TempDir(): "tmp", tileCache: "tiles"}),
	})
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	doc, err := openAPI()
	require.NoError(t, err)
	// The document's servers name where wf usually listens, and the router
	// matches a request's host against them; the tests' servers listen on
	// loopback ports of their own (one test swaps its server), so the
	// router gets the operations without servers: any host, paths from /.
	routed := *doc
	routed.Servers = nil
	router, err := gorillamux.NewRouter(&routed)
	require.NoError(t, err)
	return &bundle{t: t, ctx: ctx, pool: pool, store: store.New(pool), specs: specs, server: srv, http: hs,
		router: router, doc: doc, reg: reg, root: root, files: files, es: es, tracer: o.tracer, reports: reports}
}

// response is one answer, its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic map.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), string(r.body))
	return m
}

// do sends a request with a token ("" for none) and a body (a string sent as
// is, nil for none, anything else encoded as JSON), checks the answer
// against the OpenAPI document, and returns it.
func (b *bundle) do(method, path, token string, body any) response {
	b.t.Helper()
	return b.doHeaders(method, path, token, body, nil)
}

func (b *bundle) doHeaders(method, path, token string, body any, header http.Header) response {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(b.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(b.ctx, method, b.http.URL+path, rd)
	require.NoError(b.t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := b.http.Client().Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	out := response{status: res.StatusCode, header: res.Header, body: raw}
	b.checkContract(req, out)
	return out
}

// checkContract validates an answer against the OpenAPI document: the
// operation's documented status, headers and body schema. Answers to paths
// the document does not have must be problem documents.
func (b *bundle) checkContract(req *http.Request, res response) {
	b.t.Helper()
	if res.status >= 400 {
		require.Equal(b.t, "application/problem+json", res.header.Get("Content-Type"), "errors are problem documents: %s", res.body)
		var p map[string]any
		require.NoError(b.t, json.Unmarshal(res.body, &p))
		require.Equal(b.t, float64(res.status), p["status"], "problem status")
		require.NotEmpty(b.t, p["type"])
		require.NotEmpty(b.t, p["title"])
	}
	route, params, err := b.router.FindRoute(req)
	if err != nil {
		// Not an operation of the document (unknown path, method or a
		// refused path): it must be a problem.
		require.GreaterOrEqual(b.t, res.status, 400, "%s %s answered %d outside the contract", req.Method, req.URL, res.status)
		schema := b.doc.Components.Schemas["Problem"].Value
		var v any
		require.NoError(b.t, json.Unmarshal(res.body, &v))
		require.NoError(b.t, schema.VisitJSON(v, openapi3.EnableJSONSchema2020()), "problem document: %s", res.body)
		return
	}
	opts := &openapi3filter.Options{ExcludeRequestBody: true, ExcludeRequestQueryParams: true, IncludeResponseStatus: true,
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 res.status,
		Header:                 res.header,
		Options:                opts,
	}
	in.SetBodyBytes(res.body)
	require.NoError(b.t, openapi3filter.ValidateResponse(b.ctx, in), "%s %s → %d does not match the contract: %s", req.Method, req.URL.Path, res.status, res.body)
}

// snapshot fingerprints every table the API writes, to prove a refused
// request changed nothing.
func (b *bundle) snapshot() string {
	b.t.Helper()
	var out strings.Builder
	for _, table := range []string{"catalog.catalogs", "catalog.collections", "tasks.tasks", "tasks.events", "tasks.task_dedup", "tasks.event_dedup", "tasks.pauses"} {
		var n int
		var sum string
		err := b.pool.QueryRow(b.ctx, `SELECT count(*), md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM `+table+` x`).Scan(&n, &sum)
		require.NoError(b.t, err)
		fmt.Fprintf(&out, "%s %d %s\n", table, n, sum)
	}
	return out.String()
}

// unchanged runs fn and checks the database is as before.
func (b *bundle) unchanged(fn func()) {
	b.t.Helper()
	before := b.snapshot()
	fn()
	require.Equal(b.t, before, b.snapshot(), "a refused request changed the database")
}

// createCatalog registers a catalog and a collection through the API.
func (b *bundle) createCatalog(id string, collections ...string) map[string]any {
	b.t.Helper()
	res := b.do("POST", "/catalogs", tokAdmin, map[string]any{"catalog_id": id, "title": "Catalog " + id})
	require.Equal(b.t, http.StatusCreated, res.status, string(res.body))
	for _, c := range collections {
		cr := b.do("POST", "/catalogs/"+id+"/collections", tokAdmin, map[string]any{
			"collection_id": c, "layer_config": map[string]any{"geometry": "polygon"},
		})
		require.Equal(b.t, http.StatusCreated, cr.status, string(cr.body))
	}
	return res.json(b.t)
}

// requestCase is a request and the status it must answer; pointers, when
// not nil, are the fields its problem must name.
type requestCase struct {
	name     string
	method   string
	path     string
	token    string
	body     any
	status   int
	pointers []string
}

// send sends the request of tc as b and checks that it answers as tc says.
func (tc requestCase) send(t *testing.T, b *bundle) {
	t.Helper()
	res := b.do(tc.method, tc.path, tc.token, tc.body)
	require.Equal(t, tc.status, res.status, "%s: %s", tc.name, res.body)
	if tc.pointers != nil {
		require.ElementsMatch(t, tc.pointers, problemPointers(t, res), "%s: %s", tc.name, res.body)
	}
}

// requireUnchanged sends each case, in parallel subtests, and checks that
// it answers as it says and leaves the database as it was.
func (b *bundle) requireUnchanged(t *testing.T, cases []requestCase) {
	t.Helper()
	for _, tc := range cases {
		b.parallel(t, tc.name, func(t *testing.T, b *bundle) {
			b.unchanged(func() { tc.send(t, b) })
		})
	}
}

// requireAnswers sends the cases one after the other, in this test, and
// checks that each answers as it says.
func (b *bundle) requireAnswers(t *testing.T, cases ...requestCase) {
	t.Helper()
	for _, tc := range cases {
		tc.send(t, b)
	}
}

// problemPointers returns the pointers of a problem's errors.
func problemPointers(t *testing.T, res response) []string {
	t.Helper()
	var p struct {
		Errors []struct {
			Pointer *string `json:"pointer"`
		} `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(res.body, &p))
	var out []string
	for _, e := range p.Errors {
		if e.Pointer != nil {
			out = append(out, *e.Pointer)
		}
	}
	return out
}

// ingestionBody is a valid ingestion request.
func ingestionBody(source string) map[string]any {
	return map[string]any{"source": source, "format": "geojson", "id_attribute": "CODE", "asset_id": "ALBL1_01"}
}

// leaderMetrics are metrics that report the database-wide gauges, as the
// leader's do.
func leaderMetrics(pool *pgxpool.Pool) *metrics.Metrics {
	m := metrics.New(metrics.Config{Store: store.New(pool), TaskTypes: []string{"noop"}, DepthTTL: time.Millisecond, Logger: quietLogger})
	m.SetSources(metrics.Sources{IsLeader: func() bool { return true }})
	return m
}

// startFeatureEngine runs an engine as `wf run` does for feature data: the
// registry's handlers, the standard reporters (detailed reports under
// reportDir), the event consumer, and the feature handlers bound in setup,
// local files limited to b.root (as files.local_roots), traced with
// b.tracer when the test set one.
func startFeatureEngine(t *testing.T, b *bundle, reportDir string) {
	t.Helper()
	st := store.New(b.pool)
	factory, err := standard.Open(b.ctx, standard.Config{Progress: st, GCS: gcsreporter.Config{LocalDir: reportDir}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = factory.Close() })
	set, err := runnerset.Build(b.specs, runnerset.Options{Registry: b.reg, DefaultVisibilityTimeout: time.Minute})
	require.NoError(t, err)
	cons, err := events.NewConsumer(events.ConsumerConfig{Store: st, Client: client.New(st, b.specs).WithTracerProvider(b.tracer), Specs: b.specs,
		Owner: "e2e", Interval: 50 * time.Millisecond, Logger: quietLogger, TracerProvider: b.tracer, Inactive: runnerset.Inactive(set.Unserved)})
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{
		Pool: b.pool, Runners: set.Runners, Pairs: set.Pairs, Rules: set.Rules, PollInterval: 50 * time.Millisecond,
		Logger: quietLogger, Owner: "e2e", TracerProvider: b.tracer,
		Services: []engine.Service{{Name: "event consumer", Run: func(ctx context.Context) error { cons.Run(ctx, nil); return nil }}},
		Reporters: func(task *wftype.Task) (reporters.Reporter, error) {
			tt, _ := b.specs.TaskType(task.TaskType)
			var names []string
			for _, k := range tt.Reporters() {
				names = append(names, string(k))
			}
			return factory.New(names, reporters.TaskInfo{ID: task.ID, SchemaName: task.SchemaName, TaskType: task.TaskType})
		},
	})
	require.NoError(t, err)
	inproc.Go(t, eng.Run)
}

// copyFixture copies the admin regions fixture into folder.
func copyFixture(t *testing.T, folder string) {
	t.Helper()
	fixture, err := os.ReadFile("../catalog/ingest/testdata/admin_regions.geojson")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(folder, "admin_regions.geojson"), fixture, 0o644))
}
