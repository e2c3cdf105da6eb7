package api

import (
	"context"
	"net/http"

	"github.com/wfhq/wf/engine/store"
)

// WarningHeader is the response header of POST /tasks that warns about a
// task created all the same: "not_served: <sentence>" when no live wf run
// instance serves its type.
const WarningHeader = "Wf-Warning"

// warnUnserved sets WarningHeader on w when wf run instances run and none
// serves taskType (store.UnservedWhileRunning). A failed check sets
// nothing: the task is created either way.
func (s *Server) warnUnserved(ctx context.Context, w http.ResponseWriter, taskType string) {
	unserved, err := s.store.UnservedWhileRunning(ctx, []string{taskType})
	if err != nil || len(unserved) == 0 {
		return
	}
	w.Header().Set(WarningHeader, store.WaitingNotServed+": no running wf instance serves task type "+taskType+
		"; the task waits until one whose specs have it runs, or the running ones reload their specs (wf reload)")
}
