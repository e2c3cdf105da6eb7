package api

import (
	"encoding/json"
	"net/http"

	"github.com/wfhq/wf/catalog/registry"
)

// createCatalogRequest is the body of POST /catalogs.
type createCatalogRequest struct {
	CatalogID   string          `json:"catalog_id"`
	SchemaName  string          `json:"schema_name" wf:"nonempty"`
	Title       *string         `json:"title"`
	Description *string         `json:"description"`
	Metadata    json.RawMessage `json:"metadata"`
}

// createCatalog answers POST /catalogs: it registers a catalog (its tenant
// schema_name derived as s_<id> when not given), emits catalog.created, and
// answers 201 with the catalog. A token limited to catalogs may create only
// those (403 otherwise).
func (s *Server) createCatalog(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req createCatalogRequest
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	if !p.canUseCatalog(req.CatalogID) {
		return forbidden("this token may only create the catalogs it is limited to")
	}
	c, err := s.catalogs.Create(r.Context(), registry.NewCatalog{
		ID: req.CatalogID, SchemaName: req.SchemaName, Title: req.Title, Description: req.Description, Metadata: req.Metadata,
	})
	if err != nil {
		return err
	}
	s.writeCreated(w, "/catalogs/"+c.ID, newCatalogView(c))
	return nil
}
