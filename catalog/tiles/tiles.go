// Package tiles serves and pre-renders Mapbox Vector Tiles of a
// collection's current features: PostGIS renders each tile (ST_AsMVT,
// ST_AsMVTGeom, see store.RenderTile) and a tile cache keeps it, at
//
//	<cache_url>/<schema_name>/<catalog_id>/<collection_id>/<version>/<z>/<x>/<y>.mvt
//
// where cache_url is a file:// folder or a gs:// prefix (tiles.cache_url)
// and version is the feature table's content version
// (store.FeaturesVersion), which changes in every transaction that changes
// the features: a tile rendered for one version is never served for
// another, and a cache needs no invalidation (older versions' folders can
// be removed at leisure). Service.Tile is what the tile endpoint calls;
// Handler.Handle is the tiles_preseed builtin.
package tiles

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
)

// ContentType is the media type of a tile.
const ContentType = "application/vnd.mapbox-vector-tile"

// MaxZoom is the deepest zoom level served and pre-rendered.
const MaxZoom = 22

// maxTileBytes bounds a cached tile read back (a tile over it is rendered
// again, not trusted).
const maxTileBytes = 64 << 20

// Config configures the service and the handler.
type Config struct {
	// Store renders tiles and reads versions (the catalog's). Required.
	Store *store.Store
	// Queue records tiles_preseed's progress in its task (the queue's
	// store); nil means Store (one database for both).
	Queue *store.Store
	// CacheURL is the cache's root: gs://bucket/prefix or file:///folder;
	// "" means file://<os temp dir>/wf-tiles.
	CacheURL string
	// Objects reads and writes the cache; nil means objio.New with the zero
	// Config (the cache's location is the operator's, never a client's).
	Objects *objio.Opener
}

// Service reads tiles from the cache and renders the missing ones. It
// holds no state between calls and is safe for concurrent use.
type Service struct {
	cfg Config
}

// New validates cfg and returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("error creating the tile service: the store is nil")
	}
	cfg.CacheURL = strings.TrimSuffix(cmp.Or(cfg.CacheURL, "file://"+filepath.ToSlash(filepath.Join(os.TempDir(), "wf-tiles"))), "/")
	if !strings.HasPrefix(cfg.CacheURL, "gs://") && !strings.HasPrefix(cfg.CacheURL, "file:///") {
		return nil, fmt.Errorf("error creating the tile service: the cache %q must be gs://bucket/prefix or file:///folder", cfg.CacheURL)
	}
	cfg.Objects = objio.Or(cfg.Objects)
	cfg.Queue = cmp.Or(cfg.Queue, cfg.Store)
	return &Service{cfg: cfg}, nil
}

// Coord is one tile: zoom, column and row (XYZ scheme, row 0 north).
type Coord struct {
	Z, X, Y int
}

// Valid reports whether c exists: 0 ≤ Z ≤ MaxZoom, 0 ≤ X, Y < 2^Z.
func (c Coord) Valid() bool {
	return c.Z >= 0 && c.Z <= MaxZoom && c.X >= 0 && c.Y >= 0 && c.X < 1<<c.Z && c.Y < 1<<c.Z
}

// String returns z/x/y.
func (c Coord) String() string {
	return strconv.Itoa(c.Z) + "/" + strconv.Itoa(c.X) + "/" + strconv.Itoa(c.Y)
}

// Collection is the collection whose tiles are asked for.
type Collection struct {
	CatalogID string
	Table     store.FeatureTable
}

// location returns where tile c of version v of collection col is cached.
func (s *Service) location(col Collection, version string, c Coord) string {
	return s.cfg.CacheURL + "/" + col.Table.Schema + "/" + col.CatalogID + "/" + col.Table.Collection + "/" +
		version + "/" + c.String() + ".mvt"
}

// Tile returns tile c of the collection's current features: from the
// cache, or rendered and then cached. An empty slice is a tile no feature
// meets (it is not cached: rendering it again is one index probe).
func (s *Service) Tile(ctx context.Context, col Collection, c Coord) ([]byte, error) {
	if !c.Valid() {
		return nil, fmt.Errorf("error reading tile %s: no such tile (zoom 0 to %d, column and row below 2^zoom)", c, MaxZoom)
	}
	version, err := s.cfg.Store.FeaturesVersion(ctx, col.Table)
	if err != nil {
		return nil, err
	}
	if version != "" {
		tile, err := s.cached(ctx, col, version, c)
		if err != nil || tile != nil {
			return tile, err
		}
	} else if ok, err := s.cfg.Store.FeatureTableExists(ctx, col.Table); err != nil || !ok {
		// Never written, perhaps never made: no feature meets any tile.
		return nil, err
	}
	tile, err := s.cfg.Store.RenderTile(ctx, col.Table, col.Table.Collection, c.Z, c.X, c.Y)
	if err != nil {
		return nil, err
	}
	// A version read before rendering labels what was rendered: the render
	// is at least as new, and a newer version is never read from the old
	// one's folder.
	if len(tile) > 0 && version != "" {
		if err := s.write(ctx, col, version, c, tile); err != nil {
			return nil, err
		}
	}
	return tile, nil
}

// cached returns the cached tile, nil when there is none.
func (s *Service) cached(ctx context.Context, col Collection, version string, c Coord) ([]byte, error) {
	loc := s.location(col, version, c)
	r, err := s.cfg.Objects.Open(ctx, loc)
	if errors.Is(err, objio.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the cached tile %s: %w", c, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxTileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("error reading the cached tile %s: %w", c, err)
	}
	if len(b) == 0 || len(b) > maxTileBytes {
		return nil, nil
	}
	return b, nil
}

// exists reports whether tile c of version is cached.
func (s *Service) exists(ctx context.Context, col Collection, version string, c Coord) (bool, error) {
	r, err := s.cfg.Objects.Open(ctx, s.location(col, version, c))
	if errors.Is(err, objio.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error looking up the cached tile %s: %w", c, err)
	}
	return true, r.Close()
}

// write caches a tile; the object appears whole or not at all.
func (s *Service) write(ctx context.Context, col Collection, version string, c Coord, tile []byte) error {
	w, err := s.cfg.Objects.Create(ctx, s.location(col, version, c), ContentType)
	if err != nil {
		return fmt.Errorf("error caching tile %s: %w", c, err)
	}
	if _, err := w.Write(tile); err != nil {
		w.Abort()
		return fmt.Errorf("error caching tile %s: %w", c, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("error caching tile %s: %w", c, err)
	}
	return nil
}

// maxLat is Web Mercator's latitude limit.
const maxLat = 85.0511287798066

// Range is the tiles of one zoom level from (X0, Y0) to (X1, Y1), edges
// included.
type Range struct {
	Z, X0, Y0, X1, Y1 int
}

// Count returns how many tiles r holds.
func (r Range) Count() int64 { return int64(r.X1-r.X0+1) * int64(r.Y1-r.Y0+1) }

// tileX returns the column of longitude lon at zoom z.
func tileX(lon float64, z int) int {
	n := 1 << z
	x := int(math.Floor((lon + 180) / 360 * float64(n)))
	return min(max(x, 0), n-1)
}

// tileY returns the row of latitude lat at zoom z.
func tileY(lat float64, z int) int {
	n := 1 << z
	lat = min(max(lat, -maxLat), maxLat) * math.Pi / 180
	y := int(math.Floor((1 - math.Log(math.Tan(lat)+1/math.Cos(lat))/math.Pi) / 2 * float64(n)))
	return min(max(y, 0), n-1)
}

// Ranges returns the tiles that cover bbox [west, south, east, north] at
// each zoom from minZoom to maxZoom; a bbox whose west is east of its east
// crosses the antimeridian and gives two ranges per zoom.
func Ranges(bbox []float64, minZoom, maxZoom int) []Range {
	w, s, e, n := bbox[0], bbox[1], bbox[2], bbox[3]
	var out []Range
	for z := minZoom; z <= maxZoom; z++ {
		y0, y1 := tileY(n, z), tileY(s, z)
		if w > e && tileX(w, z) <= tileX(e, z) {
			// The two sides meet at this zoom: the whole row.
			out = append(out, Range{Z: z, X0: 0, Y0: y0, X1: 1<<z - 1, Y1: y1})
			continue
		}
		if w <= e {
			out = append(out, Range{Z: z, X0: tileX(w, z), Y0: y0, X1: tileX(e, z), Y1: y1})
			continue
		}
		out = append(out, Range{Z: z, X0: tileX(w, z), Y0: y0, X1: 1<<z - 1, Y1: y1},
			Range{Z: z, X0: 0, Y0: y0, X1: tileX(e, z), Y1: y1})
	}
	return out
}
