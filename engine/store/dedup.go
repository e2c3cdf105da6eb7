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
// holds its key, read by one call of holders for all of those.
func settleInserts[R any](ctx context.Context, ids []uuid.UUID, keys []tenantKey, rows []R, idOf func(R) uuid.UUID,
	holders func(ctx context.Context, schemas, keys []string) (map[tenantKey]R, error)) ([]inserted[R], error) {
	byID := make(map[uuid.UUID]R, len(rows))
	for _, r := range rows {
		byID[idOf(r)] = r
	}
	out := make([]inserted[R], len(ids))
	var heldSchemas, heldKeys []string
	for i, id := range ids {
		if r, ok := byID[id]; ok {
			out[i].row = r
			continue
		}
		heldSchemas, heldKeys = append(heldSchemas, keys[i].schema), append(heldKeys, keys[i].key)
	}
	if len(heldKeys) == 0 {
		return out, nil
	}
	held, err := holders(ctx, heldSchemas, heldKeys)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if _, ok := byID[id]; !ok {
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
