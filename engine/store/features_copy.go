package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Feature rows pre-encoded for COPY. An ingestion encodes each version's
// row in PostgreSQL's binary COPY format on its processing workers
// (EncodeCopyRow), in parallel, so that the merge, which runs on one
// connection and is the pipeline's narrowest stage, only patches in the
// two values it decides (the geoid, the transaction time) and sends the
// bytes: pgx's per-value encoding of the rows (a tenth of the ingestion's
// Go time, all of it on the merge's goroutine) is off that path.
//
// The row holds featureColumns in order, each as a length and its binary
// value: uuid (16 bytes), text, text or NULL, geometry (EWKB, what
// PostGIS's binary input reads), jsonb (version 1, then the text), json
// (the text), text, text, tstzrange (flags: lower inclusive, upper
// infinite; then the lower bound) and timestamptz (microseconds since
// 2000-01-01 UTC). The geoid is the row's first value and the transaction
// time its last, so both sit at fixed places.

// copyGeoIDAt is where the geoid's 16 bytes start in an encoded row: after
// the field count (2 bytes) and the geoid's length (4).
const copyGeoIDAt = 6

// pgMicros returns t as PostgreSQL's binary timestamptz, as pgx encodes it.
func pgMicros(t time.Time) int64 {
	return t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - microsecondsToY2K
}

// EncodeCopyRow encodes v's row for COPY (see above) and keeps it in v, for
// MergeFeatures and FeatureLoad.Merge to send; the geoid and transaction
// time are filled in when the row is written. v.Properties and v.Stats
// then share the row's bytes (same contents; do not write to them). Safe for concurrent use on
// distinct versions. A version that is not encoded is encoded by the merge.
func EncodeCopyRow(v *FeatureVersion) error {
	ewkb, err := ewkb4326(v.WKB)
	if err != nil {
		return fmt.Errorf("error encoding external id %q: %w", v.ExternalID, err)
	}
	n := 2 + 10*4 + 16 + len(v.ExternalID) + len(ewkb) + 1 + len(v.Properties) + len(v.Stats) +
		len(v.GeometryHash) + len(v.AttributesHash) + 13 + 8
	if v.AssetID != nil {
		n += len(*v.AssetID)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint16(b, uint16(len(featureColumns)))
	field := func(p []byte) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	text := func(s string) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	field(make([]byte, 16)) // geoid, filled in by the merge
	text(v.ExternalID)
	if v.AssetID == nil {
		b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF) // NULL
	} else {
		text(*v.AssetID)
	}
	field(ewkb)
	b = binary.BigEndian.AppendUint32(b, uint32(1+len(v.Properties)))
	b = append(b, 1) // jsonb's binary format version
	props := len(b)
	b = append(b, v.Properties...)
	stats := len(b) + 4
	field(v.Stats)
	// The version's attributes and stats become views of the row, so that
	// their bytes are held once (and a source record's text not at all).
	v.Properties = b[props : props+len(v.Properties) : props+len(v.Properties)]
	v.Stats = b[stats : stats+len(v.Stats) : stats+len(v.Stats)]
	text(v.GeometryHash)
	text(v.AttributesHash)
	const lowerInclusive, upperInfinite = 0x02, 0x10
	b = binary.BigEndian.AppendUint32(b, 13)
	b = append(b, lowerInclusive|upperInfinite)
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(pgMicros(v.ValidFrom)))
	b = binary.BigEndian.AppendUint32(b, 8)
	b = append(b, make([]byte, 8)...) // transaction_time, filled in by the merge
	v.copyRow = b
	return nil
}

// copyEncoded COPYs the versions write names, every one of them encoded,
// into t: each row gets the geoid of its outcome and the transaction time.
func copyEncoded(ctx context.Context, tx pgx.Tx, t FeatureTable, versions []FeatureVersion, out []MergeOutcome, write []int, txTime time.Time) error {
	size := len(copyHeader) + 2
	for _, k := range write {
		size += len(versions[k].copyRow)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, copyHeader...)
	tt := uint64(pgMicros(txTime))
	for _, k := range write {
		row := versions[k].copyRow
		copy(row[copyGeoIDAt:copyGeoIDAt+16], out[k].GeoID[:])
		binary.BigEndian.PutUint64(row[len(row)-8:], tt)
		buf = append(buf, row...)
	}
	buf = binary.BigEndian.AppendUint16(buf, 0xFFFF) // the end of the rows
	cols := make([]string, len(featureColumns))
	for i, c := range featureColumns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	stmt := `COPY ` + t.ident() + ` (` + strings.Join(cols, ", ") + `) FROM STDIN (FORMAT binary)`
	_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(buf), stmt)
	return err
}

// allEncoded reports whether every version write names has its row encoded.
func allEncoded(versions []FeatureVersion, write []int) bool {
	for _, k := range write {
		if versions[k].copyRow == nil {
			return false
		}
	}
	return true
}
