package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// tenantKey is a dedup key within its tenant.
type tenantKey struct{ schema, key string }

// inserted is what became of one row sent to an insert with dedup keys
// (InsertTasks, InsertEvents).
type inserted[R any] struct {
	row R // the row inserted, or the live row holding its key
	// duplicate: row is the live row holding the key; nothing was inserted.
	duplicate bool
	// released: nothing was inserted and no live row holds the key: its
	// holder finished between the insert and the look-up (row is zero).
	released bool
}

// settleInserts pairs each row sent to an insert (ids[i], under keys[i])
// with the row the insert returned for it, or else with the live row that
// holds its key, read by one call of holders for all of those. Rows
// returned in the order they were sent (a COPY's) are paired by one walk;
// others (a statement's RETURNING, in no promised order) through a map.
func settleInserts[R any](ctx context.Context, ids []uuid.UUID, keys []tenantKey, rows []R, idOf func(R) uuid.UUID,
	holders func(ctx context.Context, schemas, keys []string) (map[tenantKey]R, error)) ([]inserted[R], error) {
	out := make([]inserted[R], len(ids))
	got := make([]bool, len(ids)) // got[i]: out[i].row is ids[i]'s inserted row
	j := 0
	for i, id := range ids {
		if j < len(rows) && idOf(rows[j]) == id {
			out[i].row, got[i] = rows[j], true
			j++
		}
	}
	if j < len(rows) { // not in the order sent
		byID := make(map[uuid.UUID]int, len(rows))
		for k, r := range rows {
			byID[idOf(r)] = k
		}
		for i, id := range ids {
			k, ok := byID[id]
			if ok {
				out[i].row = rows[k]
			}
			got[i] = ok
		}
	}
	var heldSchemas, heldKeys []string
	for i := range ids {
		if !got[i] {
			heldSchemas, heldKeys = append(heldSchemas, keys[i].schema), append(heldKeys, keys[i].key)
		}
	}
	if len(heldKeys) == 0 {
		return out, nil
	}
	held, err := holders(ctx, heldSchemas, heldKeys)
	if err != nil {
		return nil, err
	}
	for i := range ids {
		if !got[i] {
			r, found := held[keys[i]]
			out[i] = inserted[R]{row: r, duplicate: found, released: !found}
		}
	}
	return out, nil
}

// holdersByKey runs q, a look-up of the live rows holding (tenant, key)
// pairs that returns each pair and then its row, and maps each pair to its
// row, scanned by scan.
func holdersByKey[R any](ctx context.Context, db DBTX, doing, q string, scan func(pgx.Row) (R, error), schemas, keys []string) (map[tenantKey]R, error) {
	type holder struct {
		key tenantKey
		row R
	}
	found, err := queryAll(ctx, db, doing, q, func(row pgx.Row) (holder, error) {
		var h holder
		var err error
		h.row, err = scan(leading{row: row, first: []any{&h.key.schema, &h.key.key}})
		return h, err
	}, schemas, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[tenantKey]R, len(found))
	for _, h := range found {
		out[h.key] = h.row
	}
	return out, nil
}
