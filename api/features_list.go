package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"

	"github.com/wfhq/wf/catalog/ogcapi"
	"github.com/wfhq/wf/engine/store"
)

// itemsParams are the query parameters of the items route.
var itemsParams = []string{"bbox", "bbox-crs", "datetime", "limit", "after", "before", "properties",
	"crs", "filter", "filter-lang", "filter-crs", "f"}

// listFeatures answers GET /catalogs/{catalog_id}/collections/{collection_id}/items:
// a GeoJSON FeatureCollection of the collection's features (the current
// versions, or those datetime selects), filtered by bbox and a CQL2
// filter, a page at a time (limit; next and prev links on a keyset, never
// an offset). The page is streamed as the database yields it: memory holds
// a buffer, never the page. Another tenant's collection answers 404.
func (s *Server) listFeatures(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
	}
	q, reader, t, err := s.itemsRequest(r, catalogID, id, itemsParams)
	if err != nil {
		return err
	}
	iq, err := reader.ParseItems(r.Context(), ogcapi.ItemsParams{
		BBox: q.get("bbox"), BBoxCRS: q.get("bbox-crs"), Datetime: q.get("datetime"), Limit: q.get("limit"),
		After: q.get("after"), Before: q.get("before"), Properties: q.get("properties"), CRS: q.get("crs"),
		Filter: q.get("filter"), FilterLang: q.get("filter-lang"), FilterCRS: q.get("filter-crs"),
	})
	if err != nil {
		return ogcProblem(err)
	}
	html := wantsHTML(r)
	fw := newFeatureWriter(w, iq.CRS)
	fw.head(`{"type":"FeatureCollection","features":[`)
	var shown []featureView // the HTML page's, which is not streamed
	add := fw.feature
	if html {
		add = func(o *store.FeatureOut) error {
			shown = append(shown, newFeatureView(o, nil))
			return nil
		}
	}
	page, err := reader.Items(r.Context(), t, iq.Store, add)
	if err != nil {
		return fw.fail(ogcProblem(err))
	}
	base := collectionPath(catalogID, id)
	links := []link{
		{Href: s.absURL(r, r.URL.RequestURI()), Rel: "self", Type: mediaGeoJSON, Title: "This page"},
		{Href: s.absURL(r, base), Rel: "collection", Type: mediaJSON, Title: "The collection"},
	}
	forward := iq.Store.Before == nil
	if page.Last != nil && (forward && page.More || !forward) {
		links = append(links, s.pageLink(r, "next", page.Last))
	}
	if page.First != nil && (!forward && page.More || forward && iq.Store.After != nil) {
		links = append(links, s.pageLink(r, "prev", page.First))
	}
	if html {
		w.Header().Del("Content-Crs")
		s.writeHTML(w, r, "Features of "+id, map[string]any{"type": "FeatureCollection", "features": shown,
			"numberReturned": page.Returned, "links": links})
		return nil
	}
	tail, _ := json.Marshal(struct {
		NumberReturned int       `json:"numberReturned"`
		TimeStamp      time.Time `json:"timeStamp"`
		Links          []link    `json:"links"`
	}{page.Returned, time.Now().UTC().Truncate(time.Second), links})
	fw.raw("],")
	fw.raw(string(tail[1:]))
	return fw.finish()
}

// featureWriter streams GeoJSON through a buffer. Nothing reaches the
// client until the buffer fills or the answer ends, so an error before
// that is still answered as a problem; an error after it aborts the
// response (the client sees a broken answer, never a short valid one).
type featureWriter struct {
	w   http.ResponseWriter
	cw  *countingWriter
	bw  *bufio.Writer
	crs ogcapi.CRS
	n   int
}

// countingWriter counts the bytes that reached the client.
type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.n == 0 {
		c.w.Header().Set("Content-Type", mediaGeoJSON)
		c.w.WriteHeader(http.StatusOK)
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// newFeatureWriter starts an answer in crs.
func newFeatureWriter(w http.ResponseWriter, crs ogcapi.CRS) *featureWriter {
	cw := &countingWriter{w: w}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Crs", "<"+crs.URI+">")
	return &featureWriter{w: w, cw: cw, bw: bufio.NewWriterSize(cw, 32<<10), crs: crs}
}

// head writes the answer's opening.
func (f *featureWriter) head(s string) { _, _ = f.bw.WriteString(s) }

// raw writes s as it is.
func (f *featureWriter) raw(s string) { _, _ = f.bw.WriteString(s) }

// feature writes one feature of a collection (a comma before all but the
// first).
func (f *featureWriter) feature(o *store.FeatureOut) error {
	if f.n > 0 {
		_ = f.bw.WriteByte(',')
	}
	f.n++
	f.write(o, nil)
	return nil
}

// write writes o as a GeoJSON Feature: id is its external id, validity
// (a foreign member) the range of time the version is valid in, and links
// when given.
func (f *featureWriter) write(o *store.FeatureOut, links []link) {
	id, _ := json.Marshal(o.Key.ExternalID)
	_, _ = f.bw.WriteString(`{"type":"Feature","id":`)
	_, _ = f.bw.Write(id)
	_, _ = f.bw.WriteString(`,"geometry":`)
	if len(o.Geometry) == 0 {
		_, _ = f.bw.WriteString("null")
	} else {
		_, _ = f.bw.Write(o.Geometry)
	}
	_, _ = f.bw.WriteString(`,"properties":`)
	_, _ = f.bw.Write(o.Properties)
	validity, _ := json.Marshal(store.ValidityLiteral(o.ValidFrom, o.ValidTo))
	_, _ = f.bw.WriteString(`,"validity":`)
	_, _ = f.bw.Write(validity)
	if links != nil {
		l, _ := json.Marshal(links)
		_, _ = f.bw.WriteString(`,"links":`)
		_, _ = f.bw.Write(l)
	}
	// A write error is the client gone: the request's context ends too,
	// which stops the read, and finish aborts the answer.
	_ = f.bw.WriteByte('}')
}

// fail answers err: as a problem when nothing reached the client yet, else
// by aborting the response.
func (f *featureWriter) fail(err error) error {
	if f.cw.n == 0 {
		f.w.Header().Del("Content-Crs")
		return err
	}
	panic(http.ErrAbortHandler)
}

// finish flushes the answer.
func (f *featureWriter) finish() error {
	if err := f.bw.Flush(); err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}

// featureView is a feature as a JSON value (the HTML page's; the JSON
// answer is written by featureWriter, in the same shape).
type featureView struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Geometry   json.RawMessage `json:"geometry"`
	Properties json.RawMessage `json:"properties"`
	Validity   string          `json:"validity"`
	Links      []link          `json:"links,omitempty"`
}

// newFeatureView copies o into a featureView.
func newFeatureView(o *store.FeatureOut, links []link) featureView {
	g := json.RawMessage("null")
	if len(o.Geometry) > 0 {
		g = append(json.RawMessage(nil), o.Geometry...)
	}
	return featureView{Type: "Feature", ID: o.Key.ExternalID, Geometry: g, Properties: append(json.RawMessage(nil), o.Properties...),
		Validity: store.ValidityLiteral(o.ValidFrom, o.ValidTo), Links: links}
}
