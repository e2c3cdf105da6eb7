package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/wfhq/wf/engine/client"
)

// IngestionTaskType is the task type the ingestion gateway creates
// (specs/ingestion.yaml).
const IngestionTaskType = "ingestion"

// submitIngestion answers POST /ingestion/{catalog_id}/{collection_id}, the
// seed's gateway. It fails fast: 404 when the catalog or the collection (its
// layer configuration) does not exist or the token may not see it, 400
// listing every way the body breaks the ingestion task type's input schema,
// each with its JSON pointer. Then it creates the task, in the catalog's
// tenant schema, with the body plus catalog_id and collection_id as inputs,
// and answers 202 Accepted with the task id, its status_url and a Location
// header. A submission whose dedup key (catalog, collection, source) is held
// by a live task creates nothing and answers 200 with that task, marked
// "deduplicated": true.
func (s *Server) submitIngestion(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, prob := pathCatalogID(r, "catalog_id")
	if prob != nil {
		return prob
	}
	collectionID, prob := pathCatalogID(r, "collection_id")
	if prob != nil {
		return prob
	}
	if !p.canUseCatalog(catalogID) {
		return catalogNotFound(catalogID)
	}
	if s.ingestion == nil {
		return newProblem(http.StatusNotImplemented, typeNotImplemented, "Not implemented",
			"the loaded specs declare no %q task type", IngestionTaskType)
	}
	ctx := r.Context()
	cat, err := s.catalogs.Get(ctx, catalogID)
	if err != nil {
		return notFoundAs(err, catalogNotFound(catalogID))
	}
	if _, err := s.catalogs.GetCollection(ctx, catalogID, collectionID); err != nil {
		return notFoundAs(err, collectionNotFound(catalogID, collectionID))
	}
	body, prob := s.readBody(w, r)
	if prob != nil {
		return prob
	}
	raw, err := ingestionInputs(body, catalogID, collectionID)
	if err != nil {
		return err
	}
	res, err := s.client.Enqueue(ctx, client.Request{TaskType: IngestionTaskType, SchemaName: cat.SchemaName, Inputs: raw})
	var verr *client.ValidationError
	if errors.As(err, &verr) && len(verr.Inputs) > 0 {
		return validationProblem("the body does not match the input schema of the ingestion task type", "", verr.Inputs)
	}
	if err != nil {
		return err
	}
	s.writeSubmission(w, res.Task, res.Duplicate)
	return nil
}

// ingestionInputs turns the body of a submission into the inputs of its
// ingestion task: the body's members plus catalog_id and collection_id,
// taken from the path (the body may repeat them, not contradict them).
func ingestionInputs(body []byte, catalogID, collectionID string) (json.RawMessage, error) {
	inputs, prob := decodeObject(body)
	if prob != nil {
		return nil, prob
	}
	for key, want := range map[string]string{"catalog_id": catalogID, "collection_id": collectionID} {
		if got, ok := inputs[key]; ok && got != want {
			return nil, validationProblem("the body contradicts the request path", "", nil).at("/"+key, "must be left out (it is taken from the path) or equal "+want)
		}
		inputs[key] = want
	}
	raw, err := json.Marshal(inputs)
	if err != nil {
		return nil, fmt.Errorf("error encoding the ingestion inputs: %w", err)
	}
	return raw, nil
}

// decodeObject decodes a body that readBody checked into a generic JSON
// object, numbers kept exact.
func decodeObject(body []byte) (map[string]any, *problem) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badRequest("unexpected data after the JSON object")
	}
	return obj, nil
}
