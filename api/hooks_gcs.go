package api

import (
	"errors"
	"net/http"

	"github.com/wfhq/wf/catalog/gcp"
)

// receiveStoragePush answers POST /hooks/gcs, the Pub/Sub push endpoint of
// the catalogs' Cloud Storage notifications (see catalog/gcp.PushReceiver).
// It takes no wf token: the push carries a Google-signed OIDC token for
// gcp.push_audience from gcp.push_service_account, checked first (401).
// The notification is written into the outbox as one event before the
// answer: 202 for a new one, 200 for a redelivery (written before) or a
// notification wf has no use for (a bucket no catalog owns any more, an
// event type that changes no asset), all of which Pub/Sub takes as an
// acknowledgement. 400 for a body that is no Cloud Storage notification,
// 403 for a push through another catalog's subscription, 503 while the
// database cannot be reached (Pub/Sub delivers it again). Without
// gcp.push_service_account the route answers 404.
func (s *Server) receiveStoragePush(w http.ResponseWriter, r *http.Request, _ *principal) error {
	if s.cfg.StoragePush == nil {
		return notFound("no storage push receiver is configured (gcp.push_service_account)")
	}
	body, prob := s.readBody(w, r)
	if prob != nil {
		return prob
	}
	res, err := s.cfg.StoragePush.Receive(r.Context(), r.Header.Get("Authorization"), body)
	switch {
	case errors.Is(err, gcp.ErrPushUnauthorized):
		p := newProblem(http.StatusUnauthorized, typeUnauthorized, "Unauthorized", "%s", err.Error())
		p.header = http.Header{"WWW-Authenticate": {`Bearer realm="wf-hooks"`}}
		return p
	case errors.Is(err, gcp.ErrBadPush):
		return badRequest("%s", err.Error())
	case errors.Is(err, gcp.ErrPushForbidden):
		return forbidden("%s", err.Error())
	case err != nil:
		return err
	}
	status := http.StatusOK
	if res.Status == "stored" {
		status = http.StatusAccepted
	}
	writeJSON(w, status, res)
	return nil
}
