package api

import (
	"net/http"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// idPage reads the limit (default 100, at most 500) and cursor parameters
// of a list ordered by a string id, for cursors of kind. The store page
// asks for one row more than limit, which tells whether a next page exists
// (see pageOf).
func idPage(q query, kind string) (page store.Page, limit int, prob *problem) {
	limit, prob = q.limit(100, 500)
	if prob != nil {
		return store.Page{}, 0, prob
	}
	page = store.Page{Limit: limit + 1}
	c, prob := q.cursor(kind)
	if prob != nil {
		return store.Page{}, 0, prob
	}
	if c != nil {
		page.After = c.ID
	}
	return page, limit, nil
}

// pageOf is the page of rows fetched with limit+1: the views of the first
// limit rows and, when there were more, the cursor next makes of the last
// row shown.
func pageOf[R, V any](rows []R, limit int, view func(R) V, next func(last R) cursor) wftype.Page[V] {
	out := wftype.Page[V]{Items: []V{}}
	for i, row := range rows {
		if i == limit {
			out.NextCursor = next(rows[i-1]).encode()
			break
		}
		out.Items = append(out.Items, view(row))
	}
	return out
}

// listByID answers a list route ordered by a string id, a page at a time:
// it reads the query (limit, cursor and the other parameters named, params
// once each, lists repeatable), the page of kind that read returns for it,
// and writes 200 with the views of its rows and, when there are more, the
// cursor of the next page (made of the last row's id).
func listByID[R, V any](w http.ResponseWriter, r *http.Request, kind string, params, lists []string,
	read func(q query, page store.Page) ([]R, error), view func(R) V, id func(R) string) error {
	q, prob := parseQuery(r, append([]string{"limit", "cursor"}, params...), lists)
	if prob != nil {
		return prob
	}
	page, limit, prob := idPage(q, kind)
	if prob != nil {
		return prob
	}
	rows, err := read(q, page)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, pageOf(rows, limit, view, func(last R) cursor {
		return cursor{Kind: kind, ID: id(last)}
	}))
	return nil
}
