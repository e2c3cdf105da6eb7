package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/wfhq/wf/config"
)

// bigQuerySource is a table of a BigQuery dataset, read through the
// official client: its metadata (tables.get) and one query sorted by the
// key (jobs.query, then jobs.getQueryResults page by page).
type bigQuerySource struct {
	client         *bigquery.Client
	project        string
	dataset, table string
	schema         bigquery.Schema
	batch          int
}

// openBigQuery creates a client for the connection's project:
// Application Default Credentials, or no authentication at an endpoint
// of the connection's own (an emulator).
func openBigQuery(ctx context.Context, c config.WarehouseConnection, table string, batch int) (*bigQuerySource, error) {
	var opts []option.ClientOption
	if c.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(c.Endpoint), option.WithoutAuthentication())
	}
	client, err := bigquery.NewClient(ctx, c.Project, opts...)
	if err != nil {
		return nil, fmt.Errorf("error creating the BigQuery client of connection %q: %w", c.Name, err)
	}
	dataset, name, _ := strings.Cut(table, ".")
	return &bigQuerySource{client: client, project: c.Project, dataset: dataset, table: name, batch: batch}, nil
}

// Columns implements source.
func (b *bigQuerySource) Columns(ctx context.Context) ([]column, error) {
	md, err := b.client.Dataset(b.dataset).Table(b.table).Metadata(ctx)
	if err != nil {
		var gerr *googleapi.Error
		if errors.As(err, &gerr) && gerr.Code == http.StatusNotFound {
			return nil, fmt.Errorf("%w %s.%s in BigQuery project %s", errNoTable, b.dataset, b.table, b.project)
		}
		return nil, fmt.Errorf("error reading the metadata of %s.%s: %w", b.dataset, b.table, err)
	}
	b.schema = md.Schema
	out := make([]column, len(md.Schema))
	for i, f := range md.Schema {
		c := column{Name: f.Name, Type: string(f.Type)}
		switch {
		case f.Repeated:
			c.Type = "ARRAY<" + c.Type + ">"
		case f.Type == bigquery.IntegerFieldType:
			c.Kind = kindInteger
		case f.Type == bigquery.StringFieldType:
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
// NULL ORDER BY key, read a page at a time.
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
	it, err := b.client.Query(sql).Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("error querying %s.%s: %w", b.dataset, b.table, err)
	}
	it.PageInfo().MaxSize = b.batch
	return &bigQueryIter{it: it, key: key, columns: columns}, nil
}

// Close implements source.
func (b *bigQuerySource) Close() { _ = b.client.Close() }

// bigQueryIter turns query rows into join rows.
type bigQueryIter struct {
	it      *bigquery.RowIterator
	key     column
	columns []string
	vals    []bigquery.Value
}

// Next implements rowIter.
func (q *bigQueryIter) Next() (*row, error) {
	err := q.it.Next(&q.vals)
	if errors.Is(err, iterator.Done) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(q.vals) != len(q.columns)+1 {
		return nil, fmt.Errorf("BigQuery returned %d columns, want %d", len(q.vals), len(q.columns)+1)
	}
	r := &row{}
	switch k := q.vals[0].(type) {
	case int64:
		r.Int = k
	case string:
		r.Text = k
	default:
		return nil, fmt.Errorf("BigQuery returned a key of type %T", k)
	}
	obj := make(map[string]any, len(q.columns))
	for i, c := range q.columns {
		obj[c] = jsonValue(q.vals[i+1])
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

// jsonValue makes a BigQuery value JSON-friendly: NUMERIC (a big.Rat) as a
// decimal number, repeated and record values element by element; the
// rest (integers, floats, strings, booleans, times, dates) marshal as they
// are.
func jsonValue(v bigquery.Value) any {
	switch x := v.(type) {
	case *big.Rat:
		return json.Number(strings.TrimRight(strings.TrimRight(x.FloatString(9), "0"), "."))
	case []bigquery.Value:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	default:
		return v
	}
}
