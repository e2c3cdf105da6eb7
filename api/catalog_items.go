package api

import (
	"context"
	"net/http"
)

// The collections and assets of a catalog are answered the same way: the
// helpers below hold that way once, and each route names its resource's
// path parser, not-found wording, registry call and view.

// itemPath parses the path parameters of one resource of a catalog the
// token may use (pathCollection, pathAsset).
type itemPath func(r *http.Request, p *principal) (catalogID, id string, prob *problem)

// getCatalogItem answers GET of one resource of a catalog: 200 with
// view of what get reads, or notFound's problem when there is none.
func getCatalogItem[T, V any](w http.ResponseWriter, r *http.Request, p *principal, path itemPath, notFound func(catalogID, id string) *problem,
	get func(ctx context.Context, catalogID, id string) (T, error), view func(T) V) error {
	catalogID, id, prob := path(r, p)
	if prob != nil {
		return prob
	}
	v, err := get(r.Context(), catalogID, id)
	if err != nil {
		return notFoundAs(err, notFound(catalogID, id))
	}
	writeJSON(w, http.StatusOK, view(v))
	return nil
}

// deleteCatalogItem answers DELETE of one resource of a catalog: 204 once
// remove has removed it, or notFound's problem when there is none.
func deleteCatalogItem[T any](w http.ResponseWriter, r *http.Request, p *principal, path itemPath, notFound func(catalogID, id string) *problem,
	remove func(ctx context.Context, catalogID, id string) (T, error)) error {
	catalogID, id, prob := path(r, p)
	if prob != nil {
		return prob
	}
	if _, err := remove(r.Context(), catalogID, id); err != nil {
		return notFoundAs(err, notFound(catalogID, id))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// createCatalogItem answers POST of a new resource of the catalog of the
// path: it decodes the body into a Req, adds it with add (whose error is
// the answer as it is, so add words its own not-found problem), and
// answers 201 with the view and location that created gives.
func createCatalogItem[Req, T any](s *Server, w http.ResponseWriter, r *http.Request, p *principal,
	add func(ctx context.Context, catalogID string, req *Req) (T, error), created func(T) (location string, view any)) error {
	catalogID, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	var req Req
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	v, err := add(r.Context(), catalogID, &req)
	if err != nil {
		return err
	}
	location, view := created(v)
	s.writeCreated(w, location, view)
	return nil
}
