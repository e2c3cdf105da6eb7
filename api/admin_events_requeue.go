package api

import "net/http"

// requeueEvent answers POST /admin/events/{event_id}/requeue (admin only): a
// DEAD_LETTER event goes back to PENDING with its attempts reset, and the
// consumers are woken. 409 when the event is not DEAD_LETTER or another
// pending event now holds its dedup key.
func (s *Server) requeueEvent(w http.ResponseWriter, r *http.Request, _ *principal) error {
	id, prob := pathTaskID(r, "event_id")
	if prob != nil {
		return prob
	}
	e, err := s.store.RequeueEvent(r.Context(), id.UUID)
	if err != nil {
		return notFoundAs(err, notFound("no event %s", id.UUID))
	}
	writeJSON(w, http.StatusOK, newEventView(e))
	return nil
}
