package api

import (
	"errors"
	"net/http"

	"github.com/wfhq/wf/wftype"
)

// getCatalog answers GET /catalogs/{catalog_id}. A catalog the token may not
// see answers 404, as one that does not exist.
func (s *Server) getCatalog(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathCatalogID(r, "catalog_id")
	if prob != nil {
		return prob
	}
	if !p.canUseCatalog(id) {
		return catalogNotFound(id)
	}
	c, err := s.catalogs.Get(r.Context(), id)
	if errors.Is(err, wftype.ErrNotFound) {
		return catalogNotFound(id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newCatalogView(c))
	return nil
}

// catalogNotFound is the one answer for a catalog that does not exist and
// for one the token may not see.
func catalogNotFound(id string) *problem { return notFound("no catalog %q", id) }

// collectionNotFound is catalogNotFound for a collection.
func collectionNotFound(catalogID, id string) *problem {
	return notFound("no collection %q in catalog %q", id, catalogID)
}
