package warehouse_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/warehouse"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/bqfake"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/livetest"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// bundle is one test's database with the collection cat/parcels of tenant
// s_cat, a warehouse table dwh.owners in the same database (another
// schema), and a fake BigQuery with the same rows as dataset.owners.
type bundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
	st   *store.Store
	root string
	// bq is the BigQuery backend (bqfake unless setupOn was given another).
	bq  bqBackend
	url string
}

// parcels are the features: pid is the integer key (P4's is not one), code the string key.
var parcels = []string{
	`{"type":"Feature","properties":{"id":"P1","pid":1,"code":"a"},"geometry":{"type":"Point","coordinates":[7.1,45]}}`,
	`{"type":"Feature","properties":{"id":"P2","pid":"2","code":"B"},"geometry":{"type":"Point","coordinates":[7.2,45]}}`,
	`{"type":"Feature","properties":{"id":"P3","pid":3,"code":"é"},"geometry":{"type":"Point","coordinates":[7.3,45]}}`,
	`{"type":"Feature","properties":{"id":"P4","pid":"abc","code":"Z"},"geometry":{"type":"Point","coordinates":[7.4,45]}}`,
	`{"type":"Feature","properties":{"id":"P5","code":"zz"},"geometry":{"type":"Point","coordinates":[7.5,45]}}`,
}

// owners are the warehouse rows: pid 1 twice, 2, 5 (no feature), a null.
var owners = [][]any{
	{int64(1), "a", "Ada", 10.5},
	{int64(1), "a", "Alan", 11.0},
	{int64(2), "B", "Bob", nil},
	{int64(5), "Z", "Eve", 3.0},
	{nil, "q", "Nobody", 1.0},
}

// setup is setupOn bqfake.
func setup(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, fakeBQ(t))
}

func setupOn(t *testing.T, backend bqBackend) *bundle {
	t.Helper()
	pool, st := catalogtest.NewStore(t, []string{"cat"}, "parcels")
	ctx := context.Background()
	root := t.TempDir()
	src := filepath.Join(root, "parcels.ndjson")
	require.NoError(t, os.WriteFile(src, []byte(strings.Join(parcels, "\n")+"\n"), 0o644))
	catalogtest.Ingest(t, st, map[string]any{"catalog_id": "cat", "collection_id": "parcels",
		"source": src, "format": "ndjson", "id_attribute": "id"})

	// The warehouse: a schema of its own in the test database.
	_, err := pool.Exec(ctx, `CREATE SCHEMA dwh;
		CREATE TABLE dwh.owners (pid bigint, code text, owner text, share float8, since date DEFAULT '2024-03-01', tags numeric[]);
		CREATE TABLE dwh.other (pid bigint)`)
	require.NoError(t, err)
	for _, o := range owners {
		_, err = pool.Exec(ctx, `INSERT INTO dwh.owners (pid, code, owner, share) VALUES ($1, $2, $3, $4)`, o...)
		require.NoError(t, err)
	}
	return &bundle{ctx: ctx, pool: pool, st: st, root: root, bq: backend, url: pool.Config().ConnString()}
}

// handler returns a dwh_join handler with the bundle's connections: "pg"
// (dwh.owners for catalog cat) and "bq" (the backend's dataset, sales on
// the fake, for every catalog).
func (b *bundle) handler(t *testing.T, mod func(*warehouse.Config)) *warehouse.Handler {
	t.Helper()
	cfg := warehouse.Config{Store: b.st, Objects: objio.New(objio.Config{LocalRoots: []string{b.root}}),
		Connections: []config.WarehouseConnection{
			{Name: "pg", Type: config.WarehousePostgres, URL: b.url, Catalogs: []string{"cat"}, Tables: []string{"dwh.owners"}},
			{Name: "bq", Type: config.WarehouseBigQuery, Project: b.bq.project, Endpoint: b.bq.endpoint, Catalogs: []string{"*"}, Tables: []string{b.bq.dataset + ".*"}},
		}, BatchSize: 2}
	if mod != nil {
		mod(&cfg)
	}
	h, err := warehouse.New(cfg)
	require.NoError(t, err)
	return h
}

func task(t *testing.T, schema string, inputs map[string]any) *wftype.Task {
	return catalogtest.NewTask(t, schema, warehouse.HandlerName, inputs)
}

// join runs the handler with inputs over cat/parcels.
func (b *bundle) join(t *testing.T, h *warehouse.Handler, inputs map[string]any) (warehouse.Outputs, *runnertest.Recorder, error) {
	t.Helper()
	inputs["catalog_id"], inputs["collection_id"] = "cat", "parcels"
	rep := &runnertest.Recorder{}
	raw, err := h.Handle(b.ctx, task(t, "s_cat", inputs), rep)
	var out warehouse.Outputs
	if err == nil {
		require.NoError(t, json.Unmarshal(raw, &out))
	}
	return out, rep, err
}

// lines reads an NDJSON file's objects.
func (b *bundle) lines(t *testing.T, name string) []map[string]any {
	return catalogtest.ReadNDJSONFile[map[string]any](t, filepath.Join(b.root, "s_cat", name))
}

// ownersOf maps each exported feature's id to its owners, in order.
func ownersOf(feats []map[string]any) map[string][]any {
	out := map[string][]any{}
	for _, f := range feats {
		p := f["properties"].(map[string]any)
		out[p["id"].(string)] = append(out[p["id"].(string)], p["owner"])
	}
	return out
}

func TestInnerJoinPostgresIntegerKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	out, rep, err := b.join(t, b.handler(t, nil), map[string]any{"connection": "pg", "table": "dwh.owners", "key": "pid",
		"destination": "joined.ndjson", "unmatched_destination": "unmatched.ndjson"})
	require.NoError(t, err)
	require.Equal(t, int64(5), out.Features)
	require.Equal(t, int64(2), out.Matched, "P1 and P2 (its key is the string \"2\")")
	require.Equal(t, int64(3), out.Written, "P1 once per owner")
	require.Equal(t, int64(1), out.Unmatched, "P3")
	require.Equal(t, int64(2), out.Rejected, "P4's key is not an integer, P5 has none")
	require.Equal(t, int64(4), out.Rows, "the null key is not read")
	require.Equal(t, int64(1), out.UnmatchedKeys)
	require.Equal(t, []string{"3"}, out.UnmatchedSample.Features)
	require.Equal(t, []string{"5"}, out.UnmatchedSample.Warehouse)

	feats := b.lines(t, "joined.ndjson")
	require.Equal(t, map[string][]any{"P1": {"Ada", "Alan"}, "P2": {"Bob"}}, ownersOf(feats))
	p2 := feats[2]["properties"].(map[string]any)
	require.Equal(t, map[string]any{"id": "P2", "pid": "2", "code": "B", "owner": "Bob", "share": nil, "since": "2024-03-01", "tags": nil}, p2,
		"every column but the key, typed as PostgreSQL writes JSON")
	require.Equal(t, []map[string]any{{"side": "features", "key": "3"}, {"side": "warehouse", "key": "5"}}, b.lines(t, "unmatched.ndjson"))

	statuses := map[reporters.RecordStatus]int{}
	for _, e := range rep.Envelopes() {
		statuses[e.Status]++
		if e.Record.System[reporters.SystemExternalID] == "P4" {
			require.Contains(t, *e.Message, `property "pid" is "abc"; the key column pid is bigint: want an integer`)
		}
	}
	require.Equal(t, map[reporters.RecordStatus]int{reporters.RecordSuccess: 2, reporters.RecordRejected: 3}, statuses)
}

func TestLeftJoinCSVAndStringKeyOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.handler(t, nil)
	out, _, err := b.join(t, h, map[string]any{"connection": "pg", "table": "dwh.owners", "key": "code",
		"join": "left", "columns": []string{"owner", "share"}, "prefix": "dwh_", "format": "csv", "destination": "joined.csv"})
	require.NoError(t, err)
	// Keys sort byte by byte on both sides: "B" < "Z" < "a" < "q" < "zz" < "é".
	require.Equal(t, int64(5), out.Features)
	require.Equal(t, int64(3), out.Matched, "a, B, Z")
	require.Equal(t, int64(2), out.Unmatched, "é and zz")
	require.Equal(t, int64(6), out.Written, "a twice, B, Z, and the unmatched ones once")
	require.Equal(t, []string{"q"}, out.UnmatchedSample.Warehouse)
	f, err := os.Open(filepath.Join(b.root, "s_cat", "joined.csv"))
	require.NoError(t, err)
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"geoid", "external_id", "wkt", "dwh_owner", "dwh_share", "properties"}, records[0])
	byID := map[string][]string{}
	for _, r := range records[1:] {
		byID[r[1]] = append(byID[r[1]], r[3]+"|"+r[4])
		require.Contains(t, r[2], "POINT(")
	}
	require.Equal(t, map[string][]string{"P1": {"Ada|10.5", "Alan|11"}, "P2": {"Bob|"}, "P4": {"Eve|3"}, "P3": {"|"}, "P5": {"|"}}, byID)

	// The same join from BigQuery, a row a page and the query slow to
	// finish: the same result.
	b.bq.fake.SetPageSize(1)
	b.bq.fake.SlowQueries(2)
	out2, _, err := b.join(t, h, map[string]any{"connection": "bq", "table": "sales.owners", "key": "code",
		"join": "left", "columns": []string{"owner", "share"}, "prefix": "dwh_", "format": "csv", "destination": "joined-bq.csv"})
	require.NoError(t, err)
	out2.Connection, out2.Warehouse, out2.Destination = out.Connection, out.Warehouse, out.Destination
	require.Equal(t, out, out2)
	require.Greater(t, b.bq.fake.Requests("jobs.getQueryResults"), 2, "paged and polled")
}

// TestBigQueryIntegerKeyGeoJSON is a contract: on bqfake, and on a real
// project under make test-live (docs/live-tests.md).
func TestBigQueryIntegerKeyGeoJSON(t *testing.T) {
	t.Parallel()
	livetest.Backends(t, fakeBQ, liveBQ, bigQueryIntegerKeyGeoJSON)
}

func bigQueryIntegerKeyGeoJSON(t *testing.T, backend bqBackend) {
	b := setupOn(t, backend)
	out, _, err := b.join(t, b.handler(t, nil), map[string]any{"connection": "bq", "table": b.bq.dataset + ".owners", "key": "pid",
		"format": "geojson", "destination": "joined.geojson"})
	require.NoError(t, err)
	require.Equal(t, int64(2), out.Matched)
	require.Equal(t, int64(3), out.Written)
	raw, err := os.ReadFile(filepath.Join(b.root, "s_cat", "joined.geojson"))
	require.NoError(t, err)
	var fc struct {
		Type     string           `json:"type"`
		Features []map[string]any `json:"features"`
	}
	require.NoError(t, json.Unmarshal(raw, &fc))
	require.Equal(t, "FeatureCollection", fc.Type)
	// The rows of one key come in the order the warehouse gives them
	// (BigQuery's ORDER BY key leaves ties in any order).
	owners := ownersOf(fc.Features)
	require.ElementsMatch(t, []any{"Ada", "Alan"}, owners["P1"])
	require.Equal(t, []any{"Bob"}, owners["P2"])
	require.Len(t, owners, 2)
	shares := map[any]any{}
	for _, f := range fc.Features {
		p := f["properties"].(map[string]any)
		shares[p["owner"]] = p["share"]
	}
	require.Equal(t, map[any]any{"Ada": 10.5, "Alan": 11.0, "Bob": nil}, shares, "FLOAT64 as numbers, NULL as null")
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.handler(t, nil)
	for name, tc := range map[string]struct {
		inputs map[string]any
		want   string
	}{
		"table not allowed": {map[string]any{"connection": "pg", "table": "dwh.other", "key": "pid", "destination": "x.ndjson"},
			`catalog cat may not read dwh.other through connection "pg"`},
		"unknown connection": {map[string]any{"connection": "nope", "table": "dwh.owners", "key": "pid", "destination": "x.ndjson"},
			`through connection "nope" (warehouse.connections allows it only pg, bq, with the tables listed there)`},
		"no such column": {map[string]any{"connection": "pg", "table": "dwh.owners", "key": "parcel", "destination": "x.ndjson"},
			`dwh.owners has no column "parcel"; its columns are pid, code, owner, share, since, tags`},
		"key type": {map[string]any{"connection": "pg", "table": "dwh.owners", "key": "share", "destination": "x.ndjson"},
			"the key column dwh.owners.share is of type double precision; a key must be an integer or a string column"},
		"no such table": {map[string]any{"connection": "bq", "table": "sales.nothing", "key": "pid", "destination": "x.ndjson"},
			"no such table sales.nothing in BigQuery project proj"},
		"destination outside": {map[string]any{"connection": "pg", "table": "dwh.owners", "key": "pid", "destination": "/etc/x.ndjson"},
			"outside the files of tenant s_cat"},
		"bad format": {map[string]any{"connection": "pg", "table": "dwh.owners", "key": "pid", "destination": "x", "format": "xml"},
			`"format" is "xml", want ndjson, geojson or csv`},
	} {
		_, _, err := b.join(t, h, tc.inputs)
		require.ErrorContains(t, err, tc.want, name)
		require.True(t, wftype.IsPermanent(err), name)
	}
	_, err := os.Stat(filepath.Join(b.root, "s_cat", "x.ndjson"))
	require.True(t, os.IsNotExist(err), "a refused join writes nothing")

	// Another tenant's task cannot join this catalog's features.
	_, err = h.Handle(b.ctx, task(t, "s_other", map[string]any{"catalog_id": "cat", "collection_id": "parcels",
		"connection": "bq", "table": "sales.owners", "key": "pid", "destination": "y.ndjson"}), &runnertest.Recorder{})
	require.ErrorContains(t, err, `the task belongs to tenant "s_other"`)

	// A catalog without a connection of its own is told so, and nothing about others'.
	_, err = b.st.CreateCatalog(b.ctx, store.NewCatalog{ID: "cat2", SchemaName: "s_cat2"})
	require.NoError(t, err)
	_, err = b.st.CreateCollection(b.ctx, store.NewCollection{CatalogID: "cat2", ID: "parcels"})
	require.NoError(t, err)
	h2 := b.handler(t, func(c *warehouse.Config) { c.Connections = c.Connections[:1] })
	_, err = h2.Handle(b.ctx, task(t, "s_cat2", map[string]any{"catalog_id": "cat2", "collection_id": "parcels",
		"connection": "pg", "table": "dwh.owners", "key": "pid", "destination": "y.ndjson"}), &runnertest.Recorder{})
	require.ErrorContains(t, err, "warehouse.connections allows it no connection")

	// One key with more rows than the join may hold.
	h3 := b.handler(t, func(c *warehouse.Config) { c.MaxGroupRows = 1 })
	_, _, err = b.join(t, h3, map[string]any{"connection": "pg", "table": "dwh.owners", "key": "pid", "destination": "z.ndjson"})
	require.ErrorContains(t, err, "key 1 has more than 1 rows in dwh.owners")
	require.True(t, wftype.IsPermanent(err))
	_, err = os.Stat(filepath.Join(b.root, "s_cat", "z.ndjson"))
	require.True(t, os.IsNotExist(err), "a failed join leaves no partial export")
}

// TestBigQueryValueTypes reads a column of every kind BigQuery's REST API
// writes differently: the values land in the export as JSON numbers,
// booleans, exact decimals, RFC 3339 times, lists and records.
func TestBigQueryValueTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Date(2024, 3, 1, 10, 30, 0, 123456000, time.UTC)
	b.bq.fake.AddTable("proj", "sales", "typed", []bqfake.Field{
		{Name: "pid", Type: "INT64"}, {Name: "at", Type: "TIMESTAMP"}, {Name: "amount", Type: "NUMERIC"},
		{Name: "big", Type: "BIGNUMERIC"}, {Name: "ok", Type: "BOOLEAN"}, {Name: "day", Type: "DATE"},
		{Name: "ratio", Type: "FLOAT"}, {Name: "tags", Type: "INTEGER", Mode: "REPEATED"},
		{Name: "addr", Type: "RECORD", Fields: []bqfake.Field{{Name: "street", Type: "STRING"}, {Name: "no", Type: "INTEGER"}}},
		{Name: "raw", Type: "BYTES"}, {Name: "nothing", Type: "STRING"},
	}, [][]any{
		{int64(1), at, "10.50", "0.12345678901234567890123456789012345678", true, "2024-03-01", math.Inf(1),
			[]any{int64(3), int64(1)}, []any{"Main St", int64(7)}, "aGk=", nil},
		{int64(3), nil, "-2", "1", false, "2024-02-29", math.NaN(), []any{}, nil, nil, nil},
	})
	out, _, err := b.join(t, b.handler(t, nil), map[string]any{"connection": "bq", "table": "sales.typed", "key": "pid",
		"destination": "typed.ndjson"})
	require.NoError(t, err)
	require.Equal(t, int64(2), out.Matched)
	props := map[string]string{}
	raw, err := os.ReadFile(filepath.Join(b.root, "s_cat", "typed.ndjson"))
	require.NoError(t, err)
	for line := range strings.Lines(string(raw)) {
		var f struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &f))
		var id string
		require.NoError(t, json.Unmarshal(f.Properties["id"], &id))
		var keys []string
		for k := range f.Properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var sb strings.Builder
		for _, k := range keys {
			sb.WriteString(k + "=" + string(f.Properties[k]) + " ")
		}
		props[id] = strings.TrimSpace(sb.String())
	}
	require.Equal(t, map[string]string{
		"P1": `addr=["Main St",7] amount=10.5 at="2024-03-01T10:30:00.123456Z" big=0.12345678901234567890123456789012345678 ` +
			`code="a" day="2024-03-01" id="P1" nothing=null ok=true pid=1 ratio="Infinity" raw="aGk=" tags=[3,1]`,
		"P3": `addr=null amount=-2 at=null big=1 code="é" day="2024-02-29" id="P3" nothing=null ok=false pid=3 ratio="NaN" raw=null tags=[]`,
	}, props)
}

// TestBigQueryRetries: the errors BigQuery asks callers to retry (503
// backendError, 429 rateLimitExceeded, 500 internalError) are retried
// within the join, with the same requestId for the query; any other
// error, or one that lasts, fails the join with BigQuery's message.
func TestBigQueryRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.handler(t, nil)
	b.bq.fake.SetPageSize(1)
	b.bq.fake.Fail("tables.get", 1, http.StatusInternalServerError, "internalError")
	b.bq.fake.Fail("jobs.query", 2, http.StatusServiceUnavailable, "backendError")
	b.bq.fake.Fail("jobs.getQueryResults", 1, http.StatusTooManyRequests, "rateLimitExceeded")
	out, _, err := b.join(t, h, map[string]any{"connection": "bq", "table": "sales.owners", "key": "pid", "destination": "joined.ndjson"})
	require.NoError(t, err)
	require.Equal(t, int64(3), out.Written)
	require.Equal(t, int64(4), out.Rows)
	require.Equal(t, 2, b.bq.fake.Requests("tables.get"))
	require.Equal(t, 3, b.bq.fake.Requests("jobs.query"))

	// A refusal is not retried.
	b.bq.fake.Fail("jobs.query", 1, http.StatusForbidden, "accessDenied")
	_, _, err = b.join(t, h, map[string]any{"connection": "bq", "table": "sales.owners", "key": "pid", "destination": "denied.ndjson"})
	require.ErrorContains(t, err, "accessDenied")
	require.Equal(t, 4, b.bq.fake.Requests("jobs.query"))

	// An unavailability that lasts ends the join after a few tries.
	b.bq.fake.Fail("jobs.getQueryResults", 100, http.StatusServiceUnavailable, "backendError")
	_, _, err = b.join(t, h, map[string]any{"connection": "bq", "table": "sales.owners", "key": "pid", "destination": "down.ndjson"})
	require.ErrorContains(t, err, "backendError")
	require.False(t, wftype.IsPermanent(err), "the task's retry policy tries again later")
	_, err = os.Stat(filepath.Join(b.root, "s_cat", "down.ndjson"))
	require.True(t, os.IsNotExist(err), "a failed join leaves no partial export")
}
