package api

import "net/http"

// getOpenAPI answers GET /openapi.json with the API's contract
// (schemas/openapi.json).
func (s *Server) getOpenAPI(w http.ResponseWriter, _ *http.Request, _ *principal) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(s.openapi)
	return nil
}
