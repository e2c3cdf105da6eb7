package api

import (
	"net/http"

	"github.com/wfhq/wf/engine/store"
)

// ReadFromHeader names, on the answers of the reads that may lag, where the
// read was served from: "replica" (database.read_url) or "primary".
const ReadFromHeader = "Wf-Read-From"

// laggingReads returns the store for a read that may lag behind the latest
// writes by a few seconds — a list, the overview, the dead letters: the
// read replica while it keeps up (Config.Reads), else the primary — and
// says which in ReadFromHeader. Reads that must see the latest write (a
// task by id, right after it was created or while a client waits on it)
// and every read that decides a write use s.store, the primary.
func (s *Server) laggingReads(w http.ResponseWriter) *store.Store {
	if s.cfg.Reads == nil {
		return s.store
	}
	st, from := s.cfg.Reads.Reads()
	w.Header().Set(ReadFromHeader, string(from))
	return st
}
