package api

import (
	"net/http"
	"sync/atomic"
)

// routesRef holds the handler a serving Server answers with: its own, or
// the one of a Server built for reloaded specs (UseRoutesOf).
type routesRef struct{ atomic.Pointer[http.Handler] }

// UseRoutesOf makes s, while it serves, answer every request from now on
// with next's routes: next is a Server built from the same configuration
// for reloaded specs (wf run builds one at each reload). s keeps its
// listener and its connections; requests under way finish as they began.
func (s *Server) UseRoutesOf(next *Server) {
	h := next.handler
	s.live.Store(&h)
}

// serveLive answers with the handler UseRoutesOf set, else s's own.
func (s *Server) serveLive(w http.ResponseWriter, r *http.Request) {
	if h := s.live.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	s.handler.ServeHTTP(w, r)
}
