package api

import (
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
