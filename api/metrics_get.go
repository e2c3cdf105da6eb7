package api

import "net/http"

// getMetrics answers GET /metrics in the Prometheus exposition format. It
// needs no token, like the health checks: scrapers reach it on the listen
// address.
func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request, _ *principal) error {
	s.metrics.Handler().ServeHTTP(w, r)
	return nil
}
