package gdal

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/wfhq/wf/catalog/gdalcmd"
)

// gdalinfoJSON is the part of `gdalinfo -json` the task reads.
type gdalinfoJSON struct {
	DriverShortName  string `json:"driverShortName"`
	Size             []int  `json:"size"`
	CoordinateSystem *struct {
		WKT string `json:"wkt"`
	} `json:"coordinateSystem"`
	WGS84Extent *struct {
		Coordinates [][][]float64 `json:"coordinates"`
	} `json:"wgs84Extent"`
	Bands []struct {
		Band                int    `json:"band"`
		Type                string `json:"type"`
		ColorInterpretation string `json:"colorInterpretation"`
		Description         string `json:"description"`
		NoDataValue         any    `json:"noDataValue"`
	} `json:"bands"`
	STAC struct {
		EPSG *int `json:"proj:epsg"`
	} `json:"stac"`
}

// readRaster describes a raster with `gdalinfo -json` (its WGS84 extent is
// GDAL's wgs84Extent, the footprint of the corners).
func readRaster(ctx context.Context, s *gdalcmd.Staged) (Info, error) {
	out, err := gdalcmd.Output(ctx, s, nil, "gdalinfo", "-json", "-nomd", "-norat", "-noct", "-wkt_format", "WKT2", s.Path)
	if err != nil {
		return Info{}, err
	}
	var g gdalinfoJSON
	if err := json.Unmarshal(out, &g); err != nil {
		return Info{}, fmt.Errorf("error reading gdalinfo's answer: %w", err)
	}
	info := Info{Kind: KindRaster, Driver: g.DriverShortName, Size: g.Size}
	if g.CoordinateSystem != nil {
		info.CRS = newCRS(g.CoordinateSystem.WKT)
		if info.CRS != nil && g.STAC.EPSG != nil {
			info.CRS.EPSG = *g.STAC.EPSG
		}
	}
	if g.WGS84Extent != nil {
		var b bounds
		for _, ring := range g.WGS84Extent.Coordinates {
			for _, p := range ring {
				if len(p) >= 2 {
					b.add(p[0], p[1])
				}
			}
		}
		info.ExtentWGS84 = b.slice()
	}
	for _, band := range g.Bands {
		info.Bands = append(info.Bands, Band{Band: band.Band, Type: band.Type, ColorInterpretation: band.ColorInterpretation,
			Description: band.Description, NoData: band.NoDataValue})
	}
	return info, nil
}

// bounds accumulates a bounding box.
type bounds struct {
	w, s, e, n float64
	ok         bool
}

// add extends the box to (x, y); non-finite values are skipped.
func (b *bounds) add(x, y float64) {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return
	}
	if !b.ok {
		*b = bounds{w: x, s: y, e: x, n: y, ok: true}
		return
	}
	b.w, b.s, b.e, b.n = min(b.w, x), min(b.s, y), max(b.e, x), max(b.n, y)
}

// union extends the box to another [w, s, e, n].
func (b *bounds) union(box []float64) {
	if len(box) == 4 {
		b.add(box[0], box[1])
		b.add(box[2], box[3])
	}
}

// slice returns [w, s, e, n], nil when nothing was added.
func (b *bounds) slice() []float64 {
	if !b.ok {
		return nil
	}
	return []float64{b.w, b.s, b.e, b.n}
}
