package ingest

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"
)

// csvReader reads a CSV source with a header row: each row's columns become
// its attributes, except the geometry columns (a WKT column, or a longitude
// and a latitude column).
type csvReader struct {
	r        *csv.Reader
	header   []string
	wkt      int // column of the WKT geometry, or -1
	lon, lat int // columns of a point geometry, or -1
	n        int64
}

// Column names recognised when CSVOptions name none.
var (
	wktNames = []string{"wkt", "geometry", "geom", "the_geom"}
	lonNames = []string{"lon", "lng", "long", "longitude", "x"}
	latNames = []string{"lat", "latitude", "y"}
)

func newCSVReader(src io.Reader, opts *CSVOptions) (*csvReader, error) {
	if opts == nil {
		opts = &CSVOptions{}
	}
	r := csv.NewReader(src)
	if opts.Delimiter != "" {
		r.Comma = []rune(opts.Delimiter)[0]
	}
	r.FieldsPerRecord = -1 // rows of the wrong width are rejected one by one
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the CSV source is empty, want a header row")
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the CSV header: %w", err)
	}
	header = append([]string(nil), header...)
	c := &csvReader{r: r, header: header, wkt: -1, lon: -1, lat: -1}
	find := func(option string, names []string) (int, error) {
		for i, h := range header {
			if option != "" && h == option {
				return i, nil
			}
			if option == "" {
				for _, n := range names {
					if strings.EqualFold(strings.TrimSpace(h), n) {
						return i, nil
					}
				}
			}
		}
		if option != "" {
			return -1, fmt.Errorf("the CSV header has no column %q (columns: %s)", option, strings.Join(header, ", "))
		}
		return -1, nil
	}
	switch {
	case opts.WKTColumn != "":
		c.wkt, err = find(opts.WKTColumn, nil)
	case opts.LonColumn != "":
		if c.lon, err = find(opts.LonColumn, nil); err == nil {
			c.lat, err = find(opts.LatColumn, nil)
		}
	default:
		c.wkt, _ = find("", wktNames)
		if c.wkt < 0 {
			c.lon, _ = find("", lonNames)
			c.lat, _ = find("", latNames)
		}
	}
	if err != nil {
		return nil, err
	}
	if c.wkt < 0 && (c.lon < 0 || c.lat < 0) {
		return nil, fmt.Errorf(`the CSV header names no geometry column: want a WKT column (%s) or longitude and latitude columns (%s; %s), or set "csv" in the inputs (columns: %s)`,
			strings.Join(wktNames, ", "), strings.Join(lonNames, ", "), strings.Join(latNames, ", "), strings.Join(header, ", "))
	}
	return c, nil
}

// next implements recordReader.
func (c *csvReader) next() (*record, error) {
	row, err := c.r.Read()
	if errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	rec := &record{index: c.n}
	c.n++
	var perr *csv.ParseError
	switch {
	case errors.As(err, &perr):
		rec.err = fmt.Errorf("line %d is not valid CSV: %w", perr.StartLine, perr.Err)
		rec.line = int64(perr.StartLine)
		return rec, nil
	case err != nil:
		return nil, fmt.Errorf("error reading CSV record %d: %w", rec.index+1, err)
	}
	line, _ := c.r.FieldPos(0)
	rec.line = int64(line)
	rec.attrs = make(map[string]any, len(c.header))
	for i, v := range row {
		if i == c.wkt || i == c.lon || i == c.lat {
			continue
		}
		if i < len(c.header) {
			rec.attrs[c.header[i]] = v
		}
	}
	if len(row) != len(c.header) {
		rec.err = fmt.Errorf("line %d has %d fields, the header %d", line, len(row), len(c.header))
		return rec, nil
	}
	rec.geom, rec.geomErr = c.geometry(row)
	return rec, nil
}

// geometry reads a row's geometry columns.
func (c *csvReader) geometry(row []string) (orb.Geometry, error) {
	if c.wkt >= 0 {
		s := strings.TrimSpace(row[c.wkt])
		if s == "" {
			return nil, fmt.Errorf("the WKT column %q is empty", c.header[c.wkt])
		}
		g, err := wkt.Unmarshal(s)
		if err != nil {
			return nil, fmt.Errorf("the WKT column %q is not a WKT geometry: %w", c.header[c.wkt], err)
		}
		return g, nil
	}
	lon, err1 := strconv.ParseFloat(strings.TrimSpace(row[c.lon]), 64)
	lat, err2 := strconv.ParseFloat(strings.TrimSpace(row[c.lat]), 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("the longitude %q and latitude %q are not both numbers", row[c.lon], row[c.lat])
	}
	return orb.Point{lon, lat}, nil
}
