package api

import (
	"net/http"

	"github.com/wfhq/wf/internal/buildinfo"
)

// health is the body of GET /healthz: "ok" and which wf answers.
type health struct {
	Status string `json:"status"`
	buildinfo.Info
}

// healthz answers GET /healthz: 200 while the process serves requests, with
// the build that serves them (as wf --version says). It checks nothing else,
// so an orchestrator restarts the process only when it is truly stuck
// (readiness is /readyz).
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ *principal) error {
	writeJSON(w, http.StatusOK, health{Status: "ok", Info: buildinfo.Read()})
	return nil
}
