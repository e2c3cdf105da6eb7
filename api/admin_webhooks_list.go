package api

import (
	"net/http"
	"time"

	"github.com/wfhq/wf/wftype"
)

// webhookView is a webhook subscriber as the API shows it (schema
// WebhookSubscriber): never its secret.
type webhookView struct {
	SubscriberID string    `json:"subscriber_id"`
	URL          string    `json:"url"`
	EventTypes   []string  `json:"event_types"`
	CreatedAt    time.Time `json:"created_at"`
}

// listWebhooks answers GET /admin/webhooks (admin only): every webhook
// subscriber, oldest first. Their deliveries are tasks of type
// webhook_delivery (GET /tasks?task_type=webhook_delivery).
func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, _ *principal) error {
	subs, err := s.store.ListWebhookSubscribers(r.Context())
	if err != nil {
		return err
	}
	out := wftype.Page[webhookView]{Items: []webhookView{}}
	for _, sub := range subs {
		out.Items = append(out.Items, webhookView{SubscriberID: sub.ID.String(), URL: sub.URL, EventTypes: sub.EventTypes, CreatedAt: sub.CreatedAt.UTC()})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
