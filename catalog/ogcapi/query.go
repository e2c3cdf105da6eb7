package ogcapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wfhq/wf/catalog/cql2"
	"github.com/wfhq/wf/engine/store"
)

// ItemsParams are the query parameters of an items request, as given
// ("" when absent).
type ItemsParams struct {
	BBox, BBoxCRS, Datetime, Limit, After, Before, Properties string
	CRS, Filter, FilterLang, FilterCRS                        string
}

// ItemsQuery is a parsed items request: the store query and the CRS its
// geometries are answered in.
type ItemsQuery struct {
	Store store.FeatureQuery
	CRS   CRS
}

// ParseItems checks an items request's parameters and builds its query;
// each refusal is a ParamError naming the parameter.
func (r *Reader) ParseItems(ctx context.Context, p ItemsParams) (ItemsQuery, error) {
	q := ItemsQuery{CRS: CRS84, Store: store.FeatureQuery{Limit: DefaultLimit}}
	if p.Limit != "" {
		n, err := strconv.Atoi(p.Limit)
		if err != nil || n < 1 {
			return q, paramErr("limit", "must be a whole number from 1 to %d", MaxLimit)
		}
		// Larger limits are served as the maximum (the standard's
		// recommendation): the next link goes on from there.
		q.Store.Limit = min(n, MaxLimit)
	}
	if p.After != "" && p.Before != "" {
		return q, paramErr("before", "give after or before, not both")
	}
	var err error
	if p.After != "" {
		if q.Store.After, err = decodeKey("after", p.After); err != nil {
			return q, err
		}
	}
	if p.Before != "" {
		if q.Store.Before, err = decodeKey("before", p.Before); err != nil {
			return q, err
		}
	}
	if err := parseDatetime(p.Datetime, &q.Store); err != nil {
		return q, err
	}
	if p.Properties != "" {
		q.Store.Properties = []string{}
		for _, name := range strings.Split(p.Properties, ",") {
			if name = strings.TrimSpace(name); name == "" {
				return q, paramErr("properties", "names properties separated by commas, none empty")
			}
			q.Store.Properties = append(q.Store.Properties, name)
		}
	}
	if p.CRS != "" {
		if q.CRS, err = r.ParseCRS(ctx, "crs", p.CRS); err != nil {
			return q, err
		}
	}
	q.Store.SRID, q.Store.FlipAxes = q.CRS.SRID, q.CRS.LatFirst
	var filters []store.FeatureExpr
	if p.BBox != "" {
		bboxCRS := CRS84
		if p.BBoxCRS != "" {
			if bboxCRS, err = r.ParseCRS(ctx, "bbox-crs", p.BBoxCRS); err != nil {
				return q, err
			}
		}
		f, err := parseBBox(p.BBox, bboxCRS)
		if err != nil {
			return q, err
		}
		filters = append(filters, f)
	} else if p.BBoxCRS != "" {
		return q, paramErr("bbox-crs", "applies to a bbox; there is none")
	}
	if p.Filter != "" {
		if p.FilterCRS != "" {
			if c, err := r.ParseCRS(ctx, "filter-crs", p.FilterCRS); err != nil {
				return q, err
			} else if c != CRS84 {
				return q, paramErr("filter-crs", "filter geometries are in %s only", CRS84URI)
			}
		}
		var f store.FeatureExpr
		switch p.FilterLang {
		case "", "cql2-text":
			f, err = cql2.ParseText(p.Filter)
		case "cql2-json":
			f, err = cql2.ParseJSON([]byte(p.Filter))
		default:
			return q, paramErr("filter-lang", "is cql2-text or cql2-json, got %q", p.FilterLang)
		}
		if err != nil {
			return q, paramErr("filter", "%s", err.Error())
		}
		filters = append(filters, f)
	} else if p.FilterLang != "" || p.FilterCRS != "" {
		return q, paramErr("filter", "filter-lang and filter-crs apply to a filter; there is none")
	}
	switch len(filters) {
	case 0:
	case 1:
		q.Store.Filter = filters[0]
	default:
		q.Store.Filter = store.ExprAnd{Args: filters}
	}
	return q, nil
}

// parseBBox reads a bbox (4 numbers, or 6 with heights, which are
// ignored) in c: a CRS84 box whose west edge lies east of its east edge
// crosses the antimeridian and is read as two boxes.
func parseBBox(raw string, c CRS) (store.FeatureExpr, error) {
	parts := strings.Split(raw, ",")
	if len(parts) != 4 && len(parts) != 6 {
		return nil, paramErr("bbox", "must be 4 numbers (or 6 with heights) separated by commas, got %d", len(parts))
	}
	v := make([]float64, len(parts))
	for i, s := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, paramErr("bbox", "%q is not a number", s)
		}
		v[i] = f
	}
	if len(v) == 6 {
		v = []float64{v[0], v[1], v[3], v[4]}
	}
	x0, y0, x1, y1 := v[0], v[1], v[2], v[3]
	if c.LatFirst {
		x0, y0, x1, y1 = v[1], v[0], v[3], v[2]
	}
	if y0 > y1 {
		return nil, paramErr("bbox", "its lower bound %v is above its upper bound %v", y0, y1)
	}
	if c.SRID != 4326 {
		if x0 > x1 {
			return nil, paramErr("bbox", "its lower bound %v is above its upper bound %v", x0, x1)
		}
		return store.ExprEnvelope{X0: x0, Y0: y0, X1: x1, Y1: y1, SRID: c.SRID}, nil
	}
	if y0 < -90 || y1 > 90 || x0 < -180 || x0 > 180 || x1 < -180 || x1 > 180 {
		return nil, paramErr("bbox", "longitudes are -180 to 180 and latitudes -90 to 90")
	}
	if x0 > x1 { // across the antimeridian
		return store.ExprOr{Args: []store.FeatureExpr{
			store.ExprEnvelope{X0: x0, Y0: y0, X1: 180, Y1: y1, SRID: 4326},
			store.ExprEnvelope{X0: -180, Y0: y0, X1: x1, Y1: y1, SRID: 4326},
		}}, nil
	}
	return store.ExprEnvelope{X0: x0, Y0: y0, X1: x1, Y1: y1, SRID: 4326}, nil
}

// parseDatetime reads datetime: an instant (the versions valid then: a
// past state of the collection) or an interval start/end, either end open
// (".." or empty: the versions valid at some time in it).
func parseDatetime(raw string, q *store.FeatureQuery) error {
	if raw == "" {
		return nil
	}
	start, end, interval := strings.Cut(raw, "/")
	if !interval {
		t, err := parseInstant(raw)
		if err != nil {
			return err
		}
		q.At = &t
		return nil
	}
	q.Interval = true
	for _, b := range []struct {
		s string
		p **time.Time
	}{{start, &q.From}, {end, &q.To}} {
		if b.s == "" || b.s == ".." {
			continue
		}
		t, err := parseInstant(b.s)
		if err != nil {
			return err
		}
		*b.p = &t
	}
	if q.From != nil && q.To != nil && q.From.After(*q.To) {
		return paramErr("datetime", "the interval's start is after its end")
	}
	return nil
}

// parseInstant reads an RFC 3339 time or a date (its midnight UTC).
func parseInstant(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, paramErr("datetime", "%q is not an RFC 3339 time (2024-01-02T15:04:05Z), a date, or an interval start/end with '..' for an open end", s)
}

// keyJSON is a feature key in a cursor.
type keyJSON struct {
	ID string    `json:"i"`
	T  time.Time `json:"t"`
}

// EncodeKey returns k as an opaque cursor (the value of after or before).
func EncodeKey(k store.FeatureKey) string {
	b, _ := json.Marshal(keyJSON{ID: k.ExternalID, T: k.TransactionTime})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeKey parses a cursor of EncodeKey.
func decodeKey(param, raw string) (*store.FeatureKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(raw)
	var k keyJSON
	if err != nil || len(b) > 4096 || json.Unmarshal(b, &k) != nil || k.T.IsZero() {
		return nil, paramErr(param, "is not a cursor of this list; follow the next and prev links unchanged")
	}
	return &store.FeatureKey{ExternalID: k.ID, TransactionTime: k.T}, nil
}
