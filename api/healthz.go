package api

import "net/http"

// healthz answers GET /healthz: 200 while the process serves requests. It
// checks nothing else, so an orchestrator restarts the process only when it
// is truly stuck (readiness is /readyz).
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ *principal) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}
