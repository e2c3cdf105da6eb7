package store

import (
	"time"

	"github.com/google/uuid"
)

// keyedBatch is a batch of rows that a statement finds by primary key: their
// ids, passed as plain bytes (a uuid.UUID, a driver.Valuer, is encoded
// through its text form); the range of their creation times, which prunes
// partitions when the statement runs; and a JSON object that gives each id
// its values, which the statement reads with ->> instead of joining an
// array to the table (a join leaves the plan to the row estimates).
type keyedBatch struct {
	ids    [][16]byte
	lo, hi time.Time
	doc    []byte
}

// newKeyedBatch builds the batch of items: id gives an item's task id, and
// value appends the item's JSON value to the object. bytesPerItem sizes the
// object's buffer. value may fail (the error is returned as is).
func newKeyedBatch[T any](items []T, bytesPerItem int, id func(*T) uuid.UUID, value func(doc []byte, item *T) ([]byte, error)) (keyedBatch, error) {
	b := keyedBatch{ids: make([][16]byte, len(items)), doc: make([]byte, 0, 2+bytesPerItem*len(items))}
	b.doc = append(b.doc, '{')
	for i := range items {
		item := &items[i]
		tid := id(item)
		b.ids[i] = tid
		ts := IDTime(tid)
		if i == 0 || ts.Before(b.lo) {
			b.lo = ts
		}
		if i == 0 || ts.After(b.hi) {
			b.hi = ts
		}
		if i > 0 {
			b.doc = append(b.doc, ',')
		}
		b.doc = appendQuotedUUID(b.doc, tid)
		b.doc = append(b.doc, ':')
		var err error
		if b.doc, err = value(b.doc, item); err != nil {
			return keyedBatch{}, err
		}
	}
	b.doc = append(b.doc, '}')
	return b, nil
}
