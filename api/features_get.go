package api

import (
	"net/http"
	"net/url"

	"github.com/wfhq/wf/catalog/ogcapi"
	"github.com/wfhq/wf/engine/store"
)

// getFeature answers GET /catalogs/{catalog_id}/collections/{collection_id}/items/{feature_id}:
// one feature, by its external id, as a GeoJSON Feature: its current
// version, or the version valid at datetime (an instant). A feature that
// does not exist (or did not then) answers 404, as does another tenant's
// collection.
func (s *Server) getFeature(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
	}
	featureID := r.PathValue("feature_id")
	if msg := checkText(featureID); msg != "" || featureID == "" {
		return invalidParameter("feature_id", "must be a feature's id")
	}
	q, reader, t, err := s.itemsRequest(r, catalogID, id, []string{"datetime", "crs", "properties", "f"})
	if err != nil {
		return err
	}
	iq, err := reader.ParseItems(r.Context(), ogcapi.ItemsParams{Datetime: q.get("datetime"), CRS: q.get("crs"), Properties: q.get("properties")})
	if err != nil {
		return ogcProblem(err)
	}
	if iq.Store.Interval {
		return invalidParameter("datetime", "one feature is read at an instant, not over an interval")
	}
	iq.Store.ExternalID, iq.Store.Limit = featureID, 1
	fw := newFeatureWriter(w, iq.CRS)
	base := collectionPath(catalogID, id)
	links := []link{
		{Href: s.absURL(r, base+"/items/"+url.PathEscape(featureID)), Rel: "self", Type: mediaGeoJSON, Title: "This feature"},
		{Href: s.absURL(r, base), Rel: "collection", Type: mediaJSON, Title: "The collection"},
	}
	html := wantsHTML(r)
	var shown featureView
	page, err := reader.Items(r.Context(), t, iq.Store, func(o *store.FeatureOut) error {
		if html {
			shown = newFeatureView(o, links)
			return nil
		}
		fw.write(o, links)
		return nil
	})
	if err != nil {
		return fw.fail(ogcProblem(err))
	}
	if page.Returned == 0 {
		return fw.fail(notFound("no feature %q in collection %q of catalog %q", featureID, id, catalogID))
	}
	if html {
		w.Header().Del("Content-Crs")
		s.writeHTML(w, r, "Feature "+featureID+" of "+id, shown)
		return nil
	}
	return fw.finish()
}
