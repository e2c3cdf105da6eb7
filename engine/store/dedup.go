package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// tenantKey is a dedup key within its tenant.
type tenantKey struct{ schema, key string }

// settleInserts pairs each row sent to an insert (ids[i], under the key
// keyOf(i)) with the row the insert returned for it, or else with the live
// row that holds its key, read by one call of holders for all of those, and
// calls set once for each i with that row and what became of it:
// duplicate, the row is the live row holding the key and nothing was
// inserted; released, nothing was inserted and no live row holds the key
// (its holder finished between the insert and the look-up; row is zero).
// Rows returned in the order they were sent (a COPY's) are paired by one
// walk; others (a statement's RETURNING, in no promised order) through a
// map. set gets a pointer so that a large row is copied once, into the
// caller's result.
func settleInserts[R any](ctx context.Context, ids []uuid.UUID, keyOf func(i int) tenantKey, rows []R, idOf func(*R) uuid.UUID,
	holders func(ctx context.Context, schemas, keys []string) (map[tenantKey]R, error), set func(i int, row *R, duplicate, released bool)) error {
	at := make([]int, len(ids)) // at[i]: the index in rows of ids[i]'s inserted row, -1 for none
	j := 0
	for i, id := range ids {
		at[i] = -1
		if j < len(rows) && idOf(&rows[j]) == id {
			at[i] = j
			j++
		}
	}
	if j < len(rows) { // not in the order sent
		byID := make(map[uuid.UUID]int, len(rows))
		for k := range rows {
			byID[idOf(&rows[k])] = k
		}
		for i, id := range ids {
			at[i] = -1
			if k, ok := byID[id]; ok {
				at[i] = k
			}
		}
	}
	var heldSchemas, heldKeys []string
	for i := range ids {
		if at[i] < 0 {
			k := keyOf(i)
			heldSchemas, heldKeys = append(heldSchemas, k.schema), append(heldKeys, k.key)
		}
	}
	var held map[tenantKey]R
	if len(heldKeys) > 0 {
		var err error
		if held, err = holders(ctx, heldSchemas, heldKeys); err != nil {
			return err
		}
	}
	for i := range ids {
		if at[i] >= 0 {
			set(i, &rows[at[i]], false, false)
			continue
		}
		r, found := held[keyOf(i)]
		set(i, &r, found, !found)
	}
	return nil
}

// holdersByKey runs q, a look-up of the live rows holding (tenant, key)
// pairs that returns each pair and then its row, and maps each pair to its
// row, scanned by scan. q reads the pairs from $1 and $2, more from $3 on.
func holdersByKey[R any](ctx context.Context, db DBTX, doing, q string, scan func(pgx.Row) (R, error), schemas, keys []string, more ...any) (map[tenantKey]R, error) {
	type holder struct {
		key tenantKey
		row R
	}
	found, err := queryAll(ctx, db, doing, q, func(row pgx.Row) (holder, error) {
		var h holder
		var err error
		h.row, err = scan(leading{row: row, first: []any{&h.key.schema, &h.key.key}})
		return h, err
	}, append([]any{schemas, keys}, more...)...)
	if err != nil {
		return nil, err
	}
	out := make(map[tenantKey]R, len(found))
	for _, h := range found {
		out[h.key] = h.row
	}
	return out, nil
}
