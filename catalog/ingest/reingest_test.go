package ingest_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
)

// squareFeature returns feature i as a GeoJSON line: a small square
// (clockwise when cw), with attributes in the given order and its population
// formatted as given.
func squareFeature(i int, size float64, name string, pop string, cw, reorder bool) string {
	x, y := float64(i%100)*0.5-25, float64(i/100)*0.5-25
	ring := [][2]float64{{x, y}, {x + size, y}, {x + size, y + size}, {x, y + size}, {x, y}}
	if cw {
		for l, r := 0, len(ring)-1; l < r; l, r = l+1, r-1 {
			ring[l], ring[r] = ring[r], ring[l]
		}
	}
	var coords []string
	for _, p := range ring {
		coords = append(coords, fmt.Sprintf("[%g,%g]", p[0], p[1]))
	}
	props := fmt.Sprintf(`{"code":"r%03d","name":%q,"pop":%s}`, i, name, pop)
	if reorder {
		props = fmt.Sprintf(`{ "pop" : %s , "name" : %q , "code" : "r%03d" }`, pop, name, i)
	}
	return fmt.Sprintf(`{"type":"Feature","properties":%s,"geometry":{"type":"Polygon","coordinates":[[%s]]}}`,
		props, strings.Join(coords, ","))
}

// squares writes n features as NDJSON; change(i) may alter feature i.
func squares(t *testing.T, n int, change func(i int) string) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		line := ""
		if change != nil {
			line = change(i)
		}
		if line == "" {
			line = squareFeature(i, 0.1, fmt.Sprintf("region %d", i), "1000", false, false)
		}
		b.WriteString(line + "\n")
	}
	return writeFile(t, "squares.ndjson", b.String())
}

func TestReingestion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := day, day.AddDate(1, 0, 0)
	ingest := func(path string, from time.Time) (map[string]int64, *capture) {
		out, rep := b.ingestFile(t, map[string]any{"source": path, "format": "ndjson", "id_attribute": "code",
			"validity_start": from.Format(time.RFC3339)})
		return map[string]int64{"created": out.Features.Created, "versioned": out.Features.Versioned,
			"unchanged": out.Features.Unchanged, "rejected": out.Features.Rejected}, rep
	}
	original := squares(t, 300, nil)
	counts, first := ingest(original, t0)
	require.Equal(t, map[string]int64{"created": 300, "versioned": 0, "unchanged": 0, "rejected": 0}, counts)

	// The same file again, even with a later validity start: nothing is written.
	counts, rep := ingest(original, t1)
	require.Equal(t, map[string]int64{"created": 0, "versioned": 0, "unchanged": 300, "rejected": 0}, counts)
	rows, current := b.count(t)
	require.Equal(t, 300, rows)
	require.Equal(t, 300, current)
	firstByID := first.byExternalID()
	for id, env := range rep.byExternalID() {
		require.Equal(t, "unchanged", env.Record.System["change"])
		// The report shows the stored version: its geoid, validity and transaction time.
		for _, k := range []string{reporters.SystemGeoID, reporters.SystemValidity, reporters.SystemTransactionTime} {
			require.Equal(t, firstByID[id].Record.System[k], env.Record.System[k], "%s %s", id, k)
		}
	}

	// A changed file: two geometries and two attribute sets change; other
	// features are only written differently (clockwise rings, members in
	// another order and spacing, 1000.0 for 1000), which is no change.
	changed := map[int]string{
		5:   squareFeature(5, 0.2, "region 5", "1000", false, false),
		17:  squareFeature(17, 0.3, "region 17", "1000", false, false),
		42:  squareFeature(42, 0.1, "renamed", "1000", false, false),
		99:  squareFeature(99, 0.1, "region 99", "1001", false, false),
		3:   squareFeature(3, 0.1, "region 3", "1000", true, false),
		8:   squareFeature(8, 0.1, "region 8", "1000", false, true),
		150: squareFeature(150, 0.1, "region 150", "1000.0", false, false),
	}
	counts, rep = ingest(squares(t, 300, func(i int) string { return changed[i] }), t1)
	require.Equal(t, map[string]int64{"created": 0, "versioned": 4, "unchanged": 296, "rejected": 0}, counts)
	var versioned []string
	for id, env := range rep.byExternalID() {
		if env.Record.System["change"] == "versioned" {
			versioned = append(versioned, id)
			require.Equal(t, firstByID[id].Record.System[reporters.SystemGeoID], env.Record.System[reporters.SystemGeoID], "a feature keeps its geoid")
			require.Equal(t, "[2025-01-01T00:00:00Z,)", env.Record.System[reporters.SystemValidity])
		}
	}
	sort.Strings(versioned)
	require.Equal(t, []string{"r005", "r017", "r042", "r099"}, versioned)
	rows, current = b.count(t)
	require.Equal(t, 304, rows)
	require.Equal(t, 300, current)
	r, err := b.pool.Query(b.ctx, `SELECT external_id FROM s_cat.regions WHERE validity = tstzrange($1, $2, '[)') ORDER BY 1`, t0, t1)
	require.NoError(t, err)
	closed, err := pgx.CollectRows(r, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, versioned, closed, "the replaced versions end where the new ones start")

	// As of the first year, the old content; today, the new.
	ft, err := store.NewFeatureTable("s_cat", "regions")
	require.NoError(t, err)
	mid := t0.AddDate(0, 6, 0)
	var name string
	_, err = b.store.ScanFeatures(b.ctx, ft, store.FeatureFilter{AsOf: &mid}, func(r *store.FeatureRow) error {
		if r.ExternalID == "r042" {
			name = string(r.Properties)
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, name, `"region 42"`)

	// The changed file again: nothing new.
	counts, _ = ingest(squares(t, 300, func(i int) string { return changed[i] }), t1)
	require.Equal(t, map[string]int64{"created": 0, "versioned": 0, "unchanged": 300, "rejected": 0}, counts)

	// A change that would start before the current version is refused.
	counts, rep = ingest(squares(t, 300, func(i int) string {
		if i == 7 {
			return squareFeature(7, 0.4, "region 7", "1000", false, false)
		}
		return changed[i]
	}), t0)
	require.Equal(t, map[string]int64{"created": 0, "versioned": 0, "unchanged": 299, "rejected": 1}, counts)
	env := rep.byExternalID()["r007"]
	require.Equal(t, reporters.RecordRejected, env.Status)
	require.Contains(t, *env.Message, "is not after the start 2024-01-01T00:00:00Z of its current version")

	// One file with the same id twice: the second is merged after the first.
	dup := writeFile(t, "dup.ndjson", squareFeature(1000, 0.1, "a", "1", false, false)+"\n"+squareFeature(1000, 0.2, "a", "1", false, false)+"\n")
	counts, _ = ingest(dup, t1)
	require.Equal(t, map[string]int64{"created": 1, "versioned": 0, "unchanged": 0, "rejected": 1}, counts)
}
