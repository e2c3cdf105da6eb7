package ingest_test

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"
)

// generatedFeature is feature i of a generated source: a small polygon of
// 6 to 12 vertices (counterclockwise, so canonical as written) somewhere on
// the globe, and four attributes.
func generatedFeature(i int) (id string, ring orb.Ring, props string) {
	id = fmt.Sprintf("f%06d", i)
	n := 6 + i%7
	cx := float64(i%3600)/10 - 179.95
	cy := float64((i/3600)%1700)/10 - 84.95
	r := 0.01 + float64(i%5)*0.005
	for k := range n {
		a := 2 * math.Pi * float64(k) / float64(n)
		ring = append(ring, orb.Point{round6(cx + r*math.Cos(a)), round6(cy + r*math.Sin(a))})
	}
	ring = append(ring, ring[0])
	props = fmt.Sprintf(`{"id":%q,"name":"parcel %d","population":%d,"density":%s,"active":%t}`,
		id, i, i*7%100000, strconv.FormatFloat(float64(i%1000)/8, 'f', -1, 64), i%2 == 0)
	return id, ring, props
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// appendRing appends a ring as GeoJSON coordinates.
func appendRing(dst []byte, ring orb.Ring) []byte {
	dst = append(dst, '[')
	for k, p := range ring {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		dst = strconv.AppendFloat(dst, p[0], 'f', -1, 64)
		dst = append(dst, ',')
		dst = strconv.AppendFloat(dst, p[1], 'f', -1, 64)
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

// writeGenerated writes n generated features to path as a GeoJSON
// FeatureCollection, streaming, and returns the file's size.
func writeGenerated(t testing.TB, path string, n int) int64 {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriterSize(f, 1<<20)
	_, err = w.WriteString(`{"type":"FeatureCollection","name":"generated","features":[` + "\n")
	require.NoError(t, err)
	var line []byte
	for i := range n {
		_, ring, props := generatedFeature(i)
		line = line[:0]
		if i > 0 {
			line = append(line, ",\n"...)
		}
		line = append(line, `{"type":"Feature","properties":`...)
		line = append(line, props...)
		line = append(line, `,"geometry":{"type":"Polygon","coordinates":[`...)
		line = appendRing(line, ring)
		line = append(line, "]}}"...)
		_, err = w.Write(line)
		require.NoError(t, err)
	}
	_, err = w.WriteString("\n]}\n")
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	st, err := f.Stat()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return st.Size()
}
