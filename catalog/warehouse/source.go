package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// keyKind is how a column's values compare as join keys.
type keyKind int

const (
	// kindOther cannot be a key.
	kindOther keyKind = iota
	// kindInteger compares as int64.
	kindInteger
	// kindString compares as text, byte by byte.
	kindString
)

// column is one column of a warehouse table.
type column struct {
	Name string
	// Type is the warehouse's own name of the type, for messages.
	Type string
	Kind keyKind
}

// row is one warehouse row: its key (Int or Text by the key's kind) and
// the selected columns as a JSON object.
type row struct {
	Int    int64
	Text   string
	Values json.RawMessage
}

// source is a warehouse table that can be read sorted by a key.
type source interface {
	// Columns returns the table's columns; an error wrapping errNoTable
	// when there is none.
	Columns(ctx context.Context) ([]column, error)
	// Rows starts reading the rows whose key is not null, sorted by it
	// (integers numerically, text in byte order), with the given columns.
	Rows(ctx context.Context, key column, columns []string) (rowIter, error)
	// Close releases the connection.
	Close()
}

// rowIter reads rows one at a time.
type rowIter interface {
	// Next returns the next row, or nil at the end.
	Next() (*row, error)
	// Close stops reading.
	Close()
}

// errNoTable is wrapped when the table does not exist or is not visible.
var errNoTable = fmt.Errorf("no such table")

// postgresSource is a table of a PostgreSQL warehouse.
type postgresSource struct {
	pool          *pgxpool.Pool
	st            *store.Store
	schema, table string
	batch         int
}

// openPostgres connects to the warehouse at url (one small pool per task).
func openPostgres(ctx context.Context, url, table string, batch int) (*postgresSource, error) {
	schema, name, _ := strings.Cut(table, ".")
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message quotes the URL (its password masked): the
		// operator's, not the tenant's to read.
		return nil, wftype.Permanent(errors.New("error reading the warehouse's database URL: it does not parse (warehouse.connections)"))
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to the warehouse: %w", err)
	}
	return &postgresSource{pool: pool, st: store.New(pool), schema: schema, table: name, batch: batch}, nil
}

// Columns implements source.
func (p *postgresSource) Columns(ctx context.Context) ([]column, error) {
	cols, err := p.st.WarehouseColumns(ctx, p.schema, p.table)
	if err != nil {
		return nil, hideConnection(err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w %s.%s in the warehouse", errNoTable, p.schema, p.table)
	}
	out := make([]column, len(cols))
	for i, c := range cols {
		out[i] = column{Name: c.Name, Type: c.Type, Kind: postgresKind(c)}
	}
	return out, nil
}

// postgresKind sorts PostgreSQL types into key kinds: smallint, integer
// and bigint are integers; text, varchar, char and the like strings.
func postgresKind(c store.WarehouseColumn) keyKind {
	switch {
	case c.Type == "smallint" || c.Type == "integer" || c.Type == "bigint":
		return kindInteger
	case c.Category == "S":
		return kindString
	}
	return kindOther
}

// Rows implements source: the store's cursor runs in a goroutine that
// hands rows over one at a time, so that the join can pull them.
func (p *postgresSource) Rows(ctx context.Context, key column, columns []string) (rowIter, error) {
	ctx, cancel := context.WithCancel(ctx)
	it := &chanIter{rows: make(chan *row, 256), cancel: cancel}
	it.wg.Add(1)
	go func() {
		defer it.wg.Done()
		defer close(it.rows)
		_, err := p.st.ScanWarehouseRows(ctx, p.schema, p.table, key.Name, key.Kind == kindInteger, columns, p.batch,
			func(r *store.WarehouseRow) error {
				select {
				case it.rows <- &row{Int: r.KeyInt, Text: r.KeyText, Values: r.JSON}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		it.err = hideConnection(err)
	}()
	return it, nil
}

// hideConnection replaces an error connecting to the warehouse, which
// pgx words with the warehouse's address, user and database
// ("failed to connect to `user=… database=…`: host:port …"), by one that
// says only what went wrong: the task's error is its tenant's to read, the
// warehouse's address is not. It stays an unavailability (retried).
func hideConnection(err error) error {
	why, ok := store.ConnectFailure(err)
	if !ok {
		return err
	}
	return fmt.Errorf("error connecting to the warehouse: %w: it %s (the connection's settings are the operator's, in warehouse.connections)", store.ErrUnavailable, why)
}

// Close implements source.
func (p *postgresSource) Close() { p.pool.Close() }

// chanIter pulls rows from a goroutine that pushes them.
type chanIter struct {
	rows   chan *row
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error // set before rows is closed
}

// Next implements rowIter.
func (c *chanIter) Next() (*row, error) {
	r, ok := <-c.rows
	if !ok {
		c.wg.Wait()
		return nil, c.err
	}
	return r, nil
}

// Close implements rowIter.
func (c *chanIter) Close() {
	c.cancel()
	for range c.rows { // let the goroutine end
	}
	c.wg.Wait()
}
