package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	bq "google.golang.org/api/bigquery/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/wfhq/wf/config"
)

// BigQuery is reached through its REST API (bigquery/v2) with the
// generated client google.golang.org/api/bigquery/v2, not the
// cloud.google.com/go/bigquery client: dwh_join needs three calls
// (tables.get, jobs.query, jobs.getQueryResults), and that client links
// Apache Arrow and the Storage Read API's gRPC stack, whose package
// initialisers cost every wf process ~10 MiB of resident memory whether or
// not a warehouse is configured (BENCHMARKS.md, idle wf run).

// bigQueryClients holds one REST client per BigQuery connection, built on
// the first join that uses it and shared by the joins after it (the
// client is safe for concurrent use; its HTTP transport keeps connections
// alive between them). A failure is not kept: the next join tries again.
type bigQueryClients struct {
	mu      sync.Mutex
	clients map[string]*bq.Service // by connection name
}

// client returns the client of connection c: Application Default
// Credentials, or no authentication at an endpoint of the connection's own
// (an emulator).
func (b *bigQueryClients) client(ctx context.Context, c config.WarehouseConnection) (*bq.Service, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if svc := b.clients[c.Name]; svc != nil {
		return svc, nil
	}
	var opts []option.ClientOption
	if c.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(c.Endpoint), option.WithoutAuthentication())
	}
	// The client outlives this task's context: its credentials refresh later.
	svc, err := bq.NewService(context.WithoutCancel(ctx), opts...)
	if err != nil {
		return nil, fmt.Errorf("error creating the BigQuery client of connection %q: %w", c.Name, err)
	}
	if b.clients == nil {
		b.clients = map[string]*bq.Service{}
	}
	b.clients[c.Name] = svc
	return svc, nil
}

// bigQuerySource is a table of a BigQuery dataset: its metadata
// (tables.get) and one query sorted by the key (jobs.query, then
// jobs.getQueryResults page by page).
type bigQuerySource struct {
	svc            *bq.Service
	project        string
	dataset, table string
	batch          int
}

// openBigQuery returns the source of a dataset.table of connection c.
func (h *Handler) openBigQuery(ctx context.Context, c config.WarehouseConnection, table string) (*bigQuerySource, error) {
	svc, err := h.bigQuery.client(ctx, c)
	if err != nil {
		return nil, err
	}
	dataset, name, _ := strings.Cut(table, ".")
	return &bigQuerySource{svc: svc, project: c.Project, dataset: dataset, table: name, batch: h.cfg.BatchSize}, nil
}

// Columns implements source.
func (b *bigQuerySource) Columns(ctx context.Context) ([]column, error) {
	var md *bq.Table
	err := retryBigQuery(ctx, func() (err error) {
		md, err = b.svc.Tables.Get(b.project, b.dataset, b.table).Context(ctx).Do()
		return err
	})
	if err != nil {
		var gerr *googleapi.Error
		if errors.As(err, &gerr) && gerr.Code == http.StatusNotFound {
			return nil, fmt.Errorf("%w %s.%s in BigQuery project %s", errNoTable, b.dataset, b.table, b.project)
		}
		return nil, fmt.Errorf("error reading the metadata of %s.%s: %w", b.dataset, b.table, err)
	}
	if md.Schema == nil {
		return nil, nil
	}
	out := make([]column, len(md.Schema.Fields))
	for i, f := range md.Schema.Fields {
		c := column{Name: f.Name, Type: f.Type}
		switch {
		case f.Mode == "REPEATED":
			c.Type = "ARRAY<" + c.Type + ">"
		case f.Type == "INTEGER" || f.Type == "INT64":
			c.Kind = kindInteger
		case f.Type == "STRING":
			c.Kind = kindString
		}
		out[i] = c
	}
	return out, nil
}

// quoteIdent quotes a BigQuery identifier (names come from the table's
// schema, so they hold no backquote; one would be refused here anyway).
func quoteIdent(s string) (string, error) {
	if strings.ContainsAny(s, "`\\\n") {
		return "", fmt.Errorf("identifier %q cannot be quoted", s)
	}
	return "`" + s + "`", nil
}

// Rows implements source: SELECT key, columns FROM table WHERE key IS NOT
// NULL ORDER BY key, read a page of at most batch rows at a time.
// Timestamps are asked as integer microseconds (formatOptions), exact
// where the default float seconds are not.
func (b *bigQuerySource) Rows(ctx context.Context, key column, columns []string) (rowIter, error) {
	names := append([]string{key.Name}, columns...)
	quoted := make([]string, len(names))
	for i, n := range names {
		q, err := quoteIdent(n)
		if err != nil {
			return nil, err
		}
		quoted[i] = q
	}
	from, err := quoteIdent(b.project + "." + b.dataset + "." + b.table)
	if err != nil {
		return nil, err
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s IS NOT NULL ORDER BY %s", strings.Join(quoted, ", "), from, quoted[0], quoted[0])
	req := &bq.QueryRequest{Query: sql, UseLegacySql: new(bool), MaxResults: int64(b.batch),
		FormatOptions: &bq.DataFormatOptions{UseInt64Timestamp: true},
		// The same id on a retry: BigQuery runs the query once.
		RequestId: uuid.NewString()}
	var res *bq.QueryResponse
	err = retryBigQuery(ctx, func() (err error) {
		res, err = b.svc.Jobs.Query(b.project, req).Context(ctx).Do()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error querying %s.%s: %w", b.dataset, b.table, err)
	}
	if res.JobReference == nil {
		return nil, fmt.Errorf("error querying %s.%s: BigQuery answered without a job reference", b.dataset, b.table)
	}
	it := &bigQueryIter{ctx: ctx, src: b, job: res.JobReference, key: key, columns: columns}
	if !res.JobComplete {
		if err := it.wait(); err != nil {
			return nil, err
		}
		return it, nil
	}
	if err := it.take(res.Schema, res.Rows, res.PageToken); err != nil {
		return nil, err
	}
	return it, nil
}

// Close implements source; the client stays, shared by later joins.
func (b *bigQuerySource) Close() {}

// bigQueryIter turns the pages of a query's results into join rows.
type bigQueryIter struct {
	ctx     context.Context
	src     *bigQuerySource
	job     *bq.JobReference
	key     column
	columns []string

	fields []*bq.TableFieldSchema // the result's, in select order
	page   []*bq.TableRow
	next   string // the next page's token; "" after the last page
}

// Longest server-side wait of one jobs.getQueryResults call while the
// query runs, and the pauses between calls that come back sooner.
const (
	bigQueryPollTimeout  = 10 * time.Second
	bigQueryPollFirst    = 50 * time.Millisecond
	bigQueryPollInterval = 2 * time.Second
)

// results reads one page of the job's results (jobs.getQueryResults).
func (q *bigQueryIter) results(token string) (*bq.GetQueryResultsResponse, error) {
	var res *bq.GetQueryResultsResponse
	err := retryBigQuery(q.ctx, func() (err error) {
		call := q.src.svc.Jobs.GetQueryResults(q.job.ProjectId, q.job.JobId).Context(q.ctx).
			MaxResults(int64(q.src.batch)).FormatOptionsUseInt64Timestamp(true).TimeoutMs(bigQueryPollTimeout.Milliseconds())
		if q.job.Location != "" {
			call = call.Location(q.job.Location)
		}
		if token != "" {
			call = call.PageToken(token)
		}
		res, err = call.Do()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading the results of the query on %s.%s: %w", q.src.dataset, q.src.table, err)
	}
	return res, nil
}

// wait polls until the query is complete and takes its first page.
func (q *bigQueryIter) wait() error {
	pause := bigQueryPollFirst
	for {
		res, err := q.results("")
		if err != nil {
			return err
		}
		if res.JobComplete {
			return q.take(res.Schema, res.Rows, res.PageToken)
		}
		if err := sleep(q.ctx, pause); err != nil {
			return err
		}
		pause = min(2*pause, bigQueryPollInterval)
	}
}

// take makes rows the current page.
func (q *bigQueryIter) take(schema *bq.TableSchema, rows []*bq.TableRow, token string) error {
	if schema != nil {
		q.fields = schema.Fields
	}
	if len(q.fields) != len(q.columns)+1 {
		return fmt.Errorf("BigQuery returned %d columns, want %d", len(q.fields), len(q.columns)+1)
	}
	q.page, q.next = rows, token
	return nil
}

// Next implements rowIter.
func (q *bigQueryIter) Next() (*row, error) {
	for len(q.page) == 0 {
		if q.next == "" {
			return nil, nil
		}
		res, err := q.results(q.next)
		if err != nil {
			return nil, err
		}
		if !res.JobComplete { // a finished job's pages are complete; be safe
			return nil, fmt.Errorf("BigQuery said the query on %s.%s is not complete after a first page of its results", q.src.dataset, q.src.table)
		}
		if err := q.take(res.Schema, res.Rows, res.PageToken); err != nil {
			return nil, err
		}
	}
	cells := q.page[0].F
	q.page = q.page[1:]
	if len(cells) != len(q.fields) {
		return nil, fmt.Errorf("BigQuery returned a row of %d values, want %d", len(cells), len(q.fields))
	}
	r := &row{}
	k, err := cellValue(q.fields[0], cells[0].V)
	if err != nil {
		return nil, err
	}
	switch k := k.(type) {
	case int64:
		r.Int = k
	case string:
		r.Text = k
	default:
		return nil, fmt.Errorf("BigQuery returned a key of type %T", k)
	}
	obj := make(map[string]any, len(q.columns))
	for i, c := range q.columns {
		if obj[c], err = cellValue(q.fields[i+1], cells[i+1].V); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("error encoding a BigQuery row: %w", err)
	}
	r.Values = b
	return r, nil
}

// Close implements rowIter.
func (q *bigQueryIter) Close() {}

// decimal is how the REST API writes NUMERIC and BIGNUMERIC values.
var decimal = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// cellValue converts one value of the REST API's rows ({"v": …}: a
// string, null, a list of {"v": …} for a REPEATED field, {"f": […]} for a
// RECORD) to the JSON value the row carries: INTEGER and FLOAT as
// numbers (NaN and ±Infinity, which JSON cannot hold, as BigQuery's
// string), BOOLEAN as a boolean, NUMERIC and BIGNUMERIC as exact decimal
// numbers, TIMESTAMP as an RFC 3339 UTC time, a RECORD as the list of its
// fields' values, an array element by element, and the other types
// (STRING, BYTES in base64, DATE, TIME, DATETIME, GEOGRAPHY in WKT, JSON,
// INTERVAL, RANGE) as the string BigQuery wrote.
func cellValue(f *bq.TableFieldSchema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if f.Mode == "REPEATED" {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("BigQuery returned %T for the REPEATED column %s, want a list", v, f.Name)
		}
		elem := *f
		elem.Mode = ""
		out := make([]any, len(list))
		for i, e := range list {
			cell, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("BigQuery returned %T in the list of column %s, want {\"v\": …}", e, f.Name)
			}
			var err error
			if out[i], err = cellValue(&elem, cell["v"]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if f.Type == "RECORD" || f.Type == "STRUCT" {
		rec, _ := v.(map[string]any)
		cells, ok := rec["f"].([]any)
		if !ok || len(cells) != len(f.Fields) {
			return nil, fmt.Errorf("BigQuery returned %v for the RECORD column %s of %d fields", v, f.Name, len(f.Fields))
		}
		out := make([]any, len(cells))
		for i, c := range cells {
			cell, _ := c.(map[string]any)
			var err error
			if out[i], err = cellValue(f.Fields[i], cell["v"]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("BigQuery returned %T for the %s column %s, want a string", v, f.Type, f.Name)
	}
	bad := func(err error) (any, error) {
		return nil, fmt.Errorf("BigQuery returned %q for the %s column %s: %w", s, f.Type, f.Name, err)
	}
	switch f.Type {
	case "INTEGER", "INT64":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad(err)
		}
		return n, nil
	case "FLOAT", "FLOAT64":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad(err)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return s, nil
		}
		return x, nil
	case "BOOLEAN", "BOOL":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return bad(err)
		}
		return b, nil
	case "NUMERIC", "BIGNUMERIC", "DECIMAL", "BIGDECIMAL":
		if !decimal.MatchString(s) {
			return bad(errors.New("not a decimal number"))
		}
		if strings.Contains(s, ".") {
			s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
		}
		return json.Number(s), nil
	case "TIMESTAMP":
		// Integer microseconds as asked; float seconds from a server that
		// ignores formatOptions.
		if us, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.UnixMicro(us).UTC(), nil
		}
		sec, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad(err)
		}
		return time.UnixMicro(int64(math.Round(sec * 1e6))).UTC(), nil
	}
	return s, nil
}

// retryBigQuery calls f until it succeeds, fails for good, or has failed
// bigQueryAttempts times: BigQuery asks callers to retry, with backoff,
// the errors it answers when it is briefly unavailable or overloaded (429
// and 5xx; reasons backendError, rateLimitExceeded, internalError). Every
// call retried is idempotent: reads, and jobs.query with a requestId.
func retryBigQuery(ctx context.Context, f func() error) error {
	pause := bigQueryRetryFirst
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt == bigQueryAttempts || !retryable(err) {
			return err
		}
		if err := sleep(ctx, pause); err != nil {
			return err
		}
		pause *= 2
	}
}

// How often and how soon a BigQuery call is retried.
const (
	bigQueryAttempts   = 5
	bigQueryRetryFirst = 200 * time.Millisecond
)

// retryable says whether BigQuery's answer asks for a retry.
func retryable(err error) bool {
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		return false
	}
	switch gerr.Code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	for _, e := range gerr.Errors {
		switch e.Reason {
		case "backendError", "rateLimitExceeded", "internalError":
			return true
		}
	}
	return false
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
