// Package warehouse is the "dwh_join" builtin handler: it joins the
// current features of a collection with the rows of a warehouse table by a
// key and exports the result (NDJSON, GeoJSON or CSV) to a file or bucket
// object, streaming with bounded memory.
//
// The join is a merge join: the features are read from PostgreSQL sorted
// by the key property and the warehouse rows sorted by the key column,
// each through a cursor (or the warehouse's paged results), and the two
// streams advance together. Only the rows of one key are held at a time
// (at most MaxGroupRows of them). Warehouses are declared connections
// (config warehouse.connections): PostgreSQL (any database URL) and
// BigQuery (its REST API, google.golang.org/api/bigquery/v2). A tenant reaches only the
// connections and tables its catalog is allowed in the configuration.
package warehouse

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wfhq/wf/catalog/export"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// HandlerName is the builtin handler name of dwh_join.
const HandlerName = "dwh_join"

// Join kinds.
const (
	// JoinInner exports the features that have a row.
	JoinInner = "inner"
	// JoinLeft exports every feature, with the row's columns when it has one.
	JoinLeft = "left"
)

// Config configures the handler.
type Config struct {
	// Store reads the features. Required.
	Store *store.Store
	// Objects creates the destinations; nil means objio.New with the zero Config.
	Objects *objio.Opener
	// Connections are the declared warehouses (warehouse.connections).
	Connections []config.WarehouseConnection
	// BatchSize is how many rows one fetch reads from either side; default 1000.
	BatchSize int
	// MaxGroupRows bounds the warehouse rows of one key (they are held
	// while that key's features are written); default 10000.
	MaxGroupRows int
	// SampleKeys is how many unmatched keys of each side the outputs list;
	// default 20.
	SampleKeys int
}

// Handler is the dwh_join handler; it is safe for concurrent use.
type Handler struct {
	cfg      Config
	bigQuery bigQueryClients
}

// New checks cfg and returns the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("error configuring the dwh_join handler: Store is required")
	}
	cfg.Objects = objio.Or(cfg.Objects)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, 1000)
	cfg.MaxGroupRows = cmp.Or(cfg.MaxGroupRows, 10000)
	cfg.SampleKeys = cmp.Or(cfg.SampleKeys, 20)
	return &Handler{cfg: cfg}, nil
}

// Inputs are a dwh_join task's inputs.
type Inputs struct {
	CatalogID    string `json:"catalog_id"`
	CollectionID string `json:"collection_id"`
	// Connection names a declared warehouse.
	Connection string `json:"connection"`
	// Table is schema.table (PostgreSQL) or dataset.table (BigQuery).
	Table string `json:"table"`
	// Key is the table's key column; FeatureKey the features' property
	// (default Key).
	Key        string `json:"key"`
	FeatureKey string `json:"feature_key,omitempty"`
	// Join is inner (the default) or left.
	Join string `json:"join,omitempty"`
	// Columns are the table's columns to add (default all but the key).
	Columns []string `json:"columns,omitempty"`
	// Prefix is put before every added column's name.
	Prefix string `json:"prefix,omitempty"`
	// Destination and Format are as export_features' (format also csv).
	Destination string `json:"destination"`
	Format      string `json:"format,omitempty"`
	// UnmatchedDestination, when set, receives every unmatched key, one
	// JSON object a line: {"side": "features"|"warehouse", "key": …}.
	UnmatchedDestination string `json:"unmatched_destination,omitempty"`
}

// Outputs are a dwh_join task's outputs.
type Outputs struct {
	Table       string `json:"table"`
	Connection  string `json:"connection"`
	Warehouse   string `json:"warehouse_table"`
	Join        string `json:"join"`
	Destination string `json:"destination"`
	Format      string `json:"format"`
	// Features is how many current features were read; Written how many
	// joined features were exported (a feature with several rows is
	// written once per row).
	Features int64 `json:"features"`
	Written  int64 `json:"written"`
	// Matched and Unmatched count features with and without a row;
	// Rejected those whose key is missing or not of the column's type.
	Matched   int64 `json:"matched"`
	Unmatched int64 `json:"unmatched"`
	Rejected  int64 `json:"rejected"`
	// Rows is how many warehouse rows were read; UnmatchedKeys how many
	// of their distinct keys no feature has.
	Rows          int64 `json:"rows"`
	UnmatchedKeys int64 `json:"unmatched_warehouse_keys"`
	// Samples of the unmatched keys of each side (the first ones, in key order).
	UnmatchedSample struct {
		Features  []string `json:"features"`
		Warehouse []string `json:"warehouse"`
	} `json:"unmatched_sample"`
	UnmatchedDestination string `json:"unmatched_destination,omitempty"`
}

// ParseInputs decodes and checks a dwh_join task's inputs, strictly.
func ParseInputs(raw json.RawMessage) (Inputs, error) {
	return builtin.ParseInputs(raw, "dwh_join", (*Inputs).check)
}

// check gives in's unset fields their defaults and lists what is wrong with in.
func (in *Inputs) check() (errs []error) {
	in.Format = cmp.Or(in.Format, export.FormatNDJSON)
	in.Join = cmp.Or(in.Join, JoinInner)
	in.FeatureKey = cmp.Or(in.FeatureKey, in.Key)
	for name, v := range map[string]string{"catalog_id": in.CatalogID, "collection_id": in.CollectionID,
		"connection": in.Connection, "table": in.Table, "key": in.Key, "destination": in.Destination} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%q is required", name))
		}
	}
	if in.Table != "" && strings.Count(in.Table, ".") != 1 {
		errs = append(errs, fmt.Errorf(`"table" is %q, want schema.table (PostgreSQL) or dataset.table (BigQuery)`, in.Table))
	}
	if in.Join != JoinInner && in.Join != JoinLeft {
		errs = append(errs, fmt.Errorf(`"join" is %q, want inner or left`, in.Join))
	}
	if in.Format != export.FormatNDJSON && in.Format != export.FormatGeoJSON && in.Format != export.FormatCSV {
		errs = append(errs, fmt.Errorf(`"format" is %q, want ndjson, geojson or csv`, in.Format))
	}
	return errs
}

// Handle implements the builtin handler signature.
func (h *Handler) Handle(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	in, err := ParseInputs(task.Inputs)
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	table, err := h.cfg.Store.TaskFeatureTable(ctx, task.SchemaName, in.CatalogID, in.CollectionID, "joining")
	if err != nil {
		return nil, err
	}
	conn, err := h.connection(in)
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	src, err := h.open(ctx, conn, in.Table)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	cols, err := src.Columns(ctx)
	if err != nil {
		if errors.Is(err, errNoTable) {
			return nil, wftype.Permanent(err)
		}
		return nil, err
	}
	key, selected, err := pickColumns(cols, in)
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	j := &join{h: h, in: in, rep: rep, key: key, columns: selected, out: Outputs{
		Table: table.String(), Connection: conn.Name, Warehouse: in.Table, Join: in.Join,
		Destination: in.Destination, Format: in.Format, UnmatchedDestination: in.UnmatchedDestination,
	}}
	j.out.UnmatchedSample.Features, j.out.UnmatchedSample.Warehouse = []string{}, []string{}
	// Destinations are written as the task's tenant: a local one only in
	// the tenant's folder under the roots.
	objs, err := h.cfg.Objects.Tenant(task.SchemaName)
	if err == nil {
		err = objs.Check(in.Destination)
	}
	if err == nil && in.UnmatchedDestination != "" {
		err = objs.Check(in.UnmatchedDestination)
	}
	if err != nil {
		return nil, wftype.Permanent(err)
	}
	j.objects = objs
	if err := j.run(ctx, table, src); err != nil {
		return nil, err
	}
	return json.Marshal(j.out)
}

// connection finds the declared connection the inputs name and checks
// that the catalog may read the table through it. Another catalog's
// connections are not named in the refusal.
func (h *Handler) connection(in Inputs) (config.WarehouseConnection, error) {
	var allowed []string
	for _, c := range h.cfg.Connections {
		if c.Name == in.Connection && c.Allows(in.CatalogID, in.Table) {
			return c, nil
		}
		if slices.Contains(c.Catalogs, in.CatalogID) || slices.Contains(c.Catalogs, "*") {
			allowed = append(allowed, c.Name)
		}
	}
	return config.WarehouseConnection{}, fmt.Errorf("catalog %s may not read %s through connection %q (warehouse.connections allows it %s)",
		in.CatalogID, in.Table, in.Connection, describeAllowed(allowed))
}

// describeAllowed words the connections a catalog may use.
func describeAllowed(names []string) string {
	if len(names) == 0 {
		return "no connection"
	}
	return "only " + strings.Join(names, ", ") + ", with the tables listed there"
}

// open connects to the warehouse of a connection.
func (h *Handler) open(ctx context.Context, c config.WarehouseConnection, table string) (source, error) {
	switch c.Type {
	case config.WarehousePostgres:
		return openPostgres(ctx, c.URL, table, h.cfg.BatchSize)
	case config.WarehouseBigQuery:
		return h.openBigQuery(ctx, c, table)
	}
	return nil, wftype.Permanent(fmt.Errorf("connection %q has unknown type %q", c.Name, c.Type))
}

// pickColumns checks the key and the wanted columns against the table's.
func pickColumns(cols []column, in Inputs) (column, []string, error) {
	byName := map[string]column{}
	names := make([]string, len(cols))
	for i, c := range cols {
		byName[c.Name] = c
		names[i] = c.Name
	}
	key, ok := byName[in.Key]
	if !ok {
		return column{}, nil, fmt.Errorf("%s has no column %q; its columns are %s", in.Table, in.Key, strings.Join(names, ", "))
	}
	if key.Kind == kindOther {
		return column{}, nil, fmt.Errorf("the key column %s.%s is of type %s; a key must be an integer or a string column", in.Table, in.Key, key.Type)
	}
	selected := in.Columns
	if selected == nil {
		for _, c := range cols {
			if c.Name != in.Key {
				selected = append(selected, c.Name)
			}
		}
	}
	for _, c := range selected {
		if _, ok := byName[c]; !ok {
			return column{}, nil, fmt.Errorf("%s has no column %q; its columns are %s", in.Table, c, strings.Join(names, ", "))
		}
	}
	return key, selected, nil
}

// join is one run of the merge join.
type join struct {
	h       *Handler
	in      Inputs
	rep     reporters.Reporter
	key     column
	columns []string
	out     Outputs

	objects   *objio.Opener
	fw        *export.Writer
	unmatched *objio.Writer
	rows      rowIter
	peeked    *row // the next warehouse row, read ahead
	done      bool // the warehouse rows are all read

	// group are the rows of groupKey; groupMatched says a feature had it.
	group        [][]byte
	groupKey     string
	haveGroup    bool
	groupMatched bool

	lastFeatureKey string
	haveFeatureKey bool
	lastRowKey     string
	haveRowKey     bool
}

// run streams both sides through the join into the destination.
func (j *join) run(ctx context.Context, t store.FeatureTable, src source) error {
	dest, err := j.objects.Create(ctx, j.in.Destination, export.ContentType(j.in.Format))
	if err != nil {
		return objectError(err)
	}
	defer dest.Abort() // after a successful Close it does nothing
	if j.in.UnmatchedDestination != "" {
		if j.unmatched, err = j.objects.Create(ctx, j.in.UnmatchedDestination, "application/x-ndjson"); err != nil {
			return objectError(err)
		}
		defer j.unmatched.Abort()
	}
	extra := make([]string, len(j.columns))
	for i, c := range j.columns {
		extra[i] = j.in.Prefix + c
	}
	if j.fw, err = export.NewWriter(dest, j.in.Format, extra); err != nil {
		return err
	}
	if j.rows, err = src.Rows(ctx, j.key, j.columns); err != nil {
		return err
	}
	defer j.rows.Close()
	integer := j.key.Kind == kindInteger
	_, err = j.h.cfg.Store.ScanFeaturesByKey(ctx, t, j.in.FeatureKey, integer, j.h.cfg.BatchSize, func(f *store.KeyedFeature) error {
		return j.feature(ctx, f)
	})
	if err != nil {
		return err
	}
	// What is left of the warehouse has no feature.
	if err := j.closeGroup(); err != nil {
		return err
	}
	if err := j.drainUnmatched(); err != nil {
		return err
	}
	if err := j.closeGroup(); err != nil {
		return err
	}
	if err := j.fw.Close(); err != nil {
		return err
	}
	j.out.Written = j.fw.Count()
	if err := dest.Close(); err != nil {
		return err
	}
	if j.unmatched != nil {
		if err := j.unmatched.Close(); err != nil {
			return err
		}
	}
	return nil
}

// objectError makes a refused destination a permanent error.
func objectError(err error) error {
	if errors.Is(err, objio.ErrInvalid) || errors.Is(err, objio.ErrForbidden) {
		return wftype.Permanent(err)
	}
	return err
}

// rowKey is a warehouse row's key as text (integers in decimal).
func (j *join) rowKey(r *row) string {
	if j.key.Kind == kindInteger {
		return strconv.FormatInt(r.Int, 10)
	}
	return r.Text
}

// less compares two keys of the join's kind.
func (j *join) less(a, b string) bool {
	if j.key.Kind == kindInteger {
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return x < y
	}
	return a < b
}

// next returns the next warehouse row (the peeked one first), nil at the end.
func (j *join) next() (*row, error) {
	if j.peeked != nil {
		r := j.peeked
		j.peeked = nil
		return r, nil
	}
	if j.done {
		return nil, nil
	}
	r, err := j.rows.Next()
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", j.in.Table, err)
	}
	if r == nil {
		j.done = true
		return nil, nil
	}
	j.out.Rows++
	k := j.rowKey(r)
	if j.haveRowKey && j.less(k, j.lastRowKey) {
		return nil, fmt.Errorf("error reading %s: the warehouse returned key %s after %s, not in key order", j.in.Table, k, j.lastRowKey)
	}
	j.lastRowKey, j.haveRowKey = k, true
	return r, nil
}

// closeGroup ends the current group, reporting its key if no feature had it.
func (j *join) closeGroup() error {
	if j.haveGroup && !j.groupMatched {
		j.out.UnmatchedKeys++
		if len(j.out.UnmatchedSample.Warehouse) < j.h.cfg.SampleKeys {
			j.out.UnmatchedSample.Warehouse = append(j.out.UnmatchedSample.Warehouse, j.groupKey)
		}
		if err := j.writeUnmatched("warehouse", j.groupKey); err != nil {
			return err
		}
	}
	j.haveGroup, j.group = false, j.group[:0]
	return nil
}

// enterGroup makes k the current group's key, ending the current group
// first when its key is another.
func (j *join) enterGroup(k string) error {
	if j.haveGroup && k == j.groupKey {
		return nil
	}
	if err := j.closeGroup(); err != nil {
		return err
	}
	j.groupKey, j.haveGroup, j.groupMatched = k, true, false
	return nil
}

// drainUnmatched reads the warehouse rows after the last feature's key: no
// feature has their keys, each ends unmatched.
func (j *join) drainUnmatched() error {
	for {
		r, err := j.next()
		if err != nil || r == nil {
			return err
		}
		if err := j.enterGroup(j.rowKey(r)); err != nil {
			return err
		}
	}
}

// loadGroup advances the warehouse to key k: every smaller key ends
// unmatched, and the rows of k (if any) become the group.
func (j *join) loadGroup(k string) error {
	if j.haveGroup && j.groupKey == k {
		return nil
	}
	if err := j.closeGroup(); err != nil {
		return err
	}
	for {
		r, err := j.next()
		if err != nil {
			return err
		}
		if r == nil {
			break
		}
		rk := j.rowKey(r)
		if rk != k && !j.less(rk, k) {
			j.peeked = r // a key after k: for a later feature
			break
		}
		// rk < k is a key no feature has (features come in key order too).
		if err := j.enterGroup(rk); err != nil {
			return err
		}
		if rk == k {
			if len(j.group) >= j.h.cfg.MaxGroupRows {
				return wftype.Permanent(fmt.Errorf("key %s has more than %d rows in %s: the join would hold them all; join on a more selective key",
					k, j.h.cfg.MaxGroupRows, j.in.Table))
			}
			j.group = append(j.group, r.Values)
		}
	}
	if j.haveGroup && j.groupKey != k {
		return j.closeGroup()
	}
	return nil
}

// featureKey checks a feature's key against the column's kind and returns
// it as text, or why it cannot be a key.
func (j *join) featureKey(f *store.KeyedFeature) (string, string) {
	switch {
	case f.KeyType == "" || f.KeyType == "null":
		return "", fmt.Sprintf("the feature has no property %q to join on", j.in.FeatureKey)
	case j.key.Kind == kindInteger:
		if f.KeyType != "number" && f.KeyType != "string" {
			return "", fmt.Sprintf("property %q is a %s; the key column %s is %s: want an integer", j.in.FeatureKey, f.KeyType, j.key.Name, j.key.Type)
		}
		n, err := strconv.ParseInt(f.Key, 10, 64)
		if err != nil || (f.KeyType == "string" && strconv.FormatInt(n, 10) != f.Key) || len(f.Key) > 19 {
			return "", fmt.Sprintf("property %q is %q; the key column %s is %s: want an integer", j.in.FeatureKey, f.Key, j.key.Name, j.key.Type)
		}
		return strconv.FormatInt(n, 10), ""
	default:
		if f.KeyType != "string" && f.KeyType != "number" {
			return "", fmt.Sprintf("property %q is a %s; the key column %s is %s: want a string", j.in.FeatureKey, f.KeyType, j.key.Name, j.key.Type)
		}
		return f.Key, ""
	}
}

// feature joins one feature (they come in key order).
func (j *join) feature(ctx context.Context, f *store.KeyedFeature) error {
	j.out.Features++
	system := map[string]any{reporters.SystemGeoID: f.GeoID.String(), reporters.SystemExternalID: f.ExternalID}
	k, why := j.featureKey(f)
	if why != "" {
		j.out.Rejected++
		return j.rep.Report(ctx, reporters.Rejected(map[string]any{j.in.FeatureKey: rawKey(f)}, system, why))
	}
	if j.haveFeatureKey && j.less(k, j.lastFeatureKey) {
		return fmt.Errorf("error joining: the features came with key %s after %s, not in key order", k, j.lastFeatureKey)
	}
	j.lastFeatureKey, j.haveFeatureKey = k, true
	if err := j.loadGroup(k); err != nil {
		return err
	}
	matched := j.haveGroup && j.groupKey == k && len(j.group) > 0
	system["join_key"] = k
	system["matched_rows"] = 0
	switch {
	case matched:
		j.groupMatched = true
		j.out.Matched++
		system["matched_rows"] = len(j.group)
		for _, values := range j.group {
			if err := j.write(f, values); err != nil {
				return err
			}
		}
	default:
		j.out.Unmatched++
		if len(j.out.UnmatchedSample.Features) < j.h.cfg.SampleKeys {
			j.out.UnmatchedSample.Features = append(j.out.UnmatchedSample.Features, k)
		}
		if err := j.writeUnmatched("features", k); err != nil {
			return err
		}
		if j.in.Join == JoinInner {
			return j.rep.Report(ctx, reporters.Rejected(map[string]any{j.in.FeatureKey: rawKey(f)}, system,
				fmt.Sprintf("%s has no row with %s = %s (inner join)", j.in.Table, j.key.Name, k)))
		}
		if err := j.write(f, nil); err != nil {
			return err
		}
	}
	return j.rep.Report(ctx, reporters.Success(reporters.Record{Type: "Feature", ID: f.GeoID.String(), System: system}))
}

// rawKey is the feature's key as its properties hold it, for a rejection's echo.
func rawKey(f *store.KeyedFeature) any {
	if f.KeyType == "" {
		return nil
	}
	return f.Key
}

// write exports a feature with a row's columns (nil: a left join's
// unmatched feature, whose added columns are null).
func (j *join) write(f *store.KeyedFeature, values json.RawMessage) error {
	var row map[string]json.RawMessage
	if values != nil {
		if err := json.Unmarshal(values, &row); err != nil {
			return fmt.Errorf("error reading a row of %s: %w", j.in.Table, err)
		}
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(f.Properties, &props); err != nil {
		return fmt.Errorf("error reading the properties of feature %s: %w", f.ExternalID, err)
	}
	if props == nil {
		props = map[string]json.RawMessage{}
	}
	extra := make([]string, len(j.columns))
	for i, c := range j.columns {
		v, ok := row[c]
		if !ok {
			v = json.RawMessage("null")
		}
		props[j.in.Prefix+c] = v
		extra[i] = csvValue(v)
	}
	merged, err := json.Marshal(props)
	if err != nil {
		return fmt.Errorf("error encoding feature %s: %w", f.ExternalID, err)
	}
	r := f.FeatureRow
	r.Properties = merged
	if j.in.Format == export.FormatCSV {
		// The added columns have their own; the properties column keeps the feature's.
		r.Properties = f.Properties
	}
	return j.fw.Write(&r, extra)
}

// csvValue writes a JSON value in a CSV cell: strings bare, null empty,
// anything else as JSON.
func csvValue(v json.RawMessage) string {
	if string(v) == "null" {
		return ""
	}
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// writeUnmatched lists one unmatched key in the unmatched destination.
func (j *join) writeUnmatched(side, key string) error {
	if j.unmatched == nil {
		return nil
	}
	line, err := json.Marshal(map[string]string{"side": side, "key": key})
	if err != nil {
		return err
	}
	_, err = j.unmatched.Write(append(line, '\n'))
	return err
}
