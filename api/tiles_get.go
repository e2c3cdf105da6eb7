package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// getTile answers GET /catalogs/{catalog_id}/collections/{collection_id}/tiles/{z}/{x}/{y}.mvt:
// the Mapbox Vector Tile of the collection's current features, from the
// tile cache, or rendered by PostGIS and cached (catalog/tiles). A tile no
// feature meets answers 204 with no body, as tile servers do. The catalog
// rules are the collection's: another tenant's answers 404.
func (s *Server) getTile(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
	}
	coord, prob := pathTile(r)
	if prob != nil {
		return prob
	}
	table, err := s.store.Catalog().ResolveFeatureTable(r.Context(), catalogID, id)
	if errors.Is(err, wftype.ErrNotFound) || errors.Is(err, store.ErrInvalidFeatureTable) {
		return collectionNotFound(catalogID, id)
	}
	if err != nil {
		return err
	}
	tile, err := s.tiles.Tile(r.Context(), tiles.Collection{CatalogID: catalogID, Table: table}, coord)
	if err != nil {
		return err
	}
	if len(tile) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Content-Type", tiles.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(tile)))
	_, _ = w.Write(tile)
	return nil
}

// pathTile reads z, x and y ("{y}.mvt") of a tile path: 400 for a tile
// that does not exist.
func pathTile(r *http.Request) (tiles.Coord, *problem) {
	var c tiles.Coord
	for _, f := range []struct {
		name string
		v    *int
	}{{"z", &c.Z}, {"x", &c.X}, {"y", &c.Y}} {
		raw := r.PathValue(f.name)
		if f.name == "y" {
			var ok bool
			if raw, ok = strings.CutSuffix(raw, ".mvt"); !ok {
				return c, invalidParameter("y", "a tile is {y}.mvt, got %q", r.PathValue("y"))
			}
		}
		n, err := strconv.Atoi(raw)
		if err != nil || raw != strconv.Itoa(n) {
			return c, invalidParameter(f.name, "must be a whole number, got %q", raw)
		}
		*f.v = n
	}
	if !c.Valid() {
		// The parameter named is the one at fault: a zoom out of range, else
		// the column, else the row.
		name := "z"
		switch {
		case c.Z < 0 || c.Z > tiles.MaxZoom:
		case c.X < 0 || c.X >= 1<<c.Z:
			name = "x"
		default:
			name = "y"
		}
		return c, invalidParameter(name, "no tile %s: zoom is 0 to %d, and x and y are below 2^zoom", c, tiles.MaxZoom)
	}
	return c, nil
}
