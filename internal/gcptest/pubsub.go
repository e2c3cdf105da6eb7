package gcptest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// PubSub is an in-process Pub/Sub (pstest).
type PubSub struct {
	Server *pstest.Server
	// Options connect a client to it.
	Options []option.ClientOption
	// Client is a client of project "test-project".
	Client *pubsub.Client
}

// NewPubSub starts an in-process Pub/Sub for the test.
func NewPubSub(t *testing.T) *PubSub {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	opts := []option.ClientOption{option.WithGRPCConn(conn)}
	c, err := pubsub.NewClient(context.Background(), "test-project", opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &PubSub{Server: srv, Options: opts, Client: c}
}

// Relay delivers the messages of topic to a push endpoint as Pub/Sub push
// does: it reads them through a pull subscription of its own and POSTs
// each, wrapped, with an OIDC token from token(), naming pushSubscription;
// a 2xx acknowledges the message, anything else has it delivered again. It
// runs until the test ends.
func (p *PubSub) Relay(t *testing.T, topic, pushSubscription, endpoint string, token func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	relay := pushSubscription + "-relay"
	_, err := p.Client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: relay, Topic: topic, AckDeadlineSeconds: 10})
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	hc := &http.Client{Timeout: time.Minute}
	go func() {
		defer close(done)
		_ = p.Client.Subscriber(relay).Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
			body, _ := json.Marshal(map[string]any{
				"message": map[string]any{
					"attributes": m.Attributes, "data": base64.StdEncoding.EncodeToString(m.Data),
					"messageId": m.ID, "publishTime": m.PublishTime.UTC().Format(time.RFC3339Nano),
				},
				"subscription": pushSubscription,
			})
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
			if err != nil {
				m.Nack()
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token())
			resp, err := hc.Do(req)
			if err != nil {
				m.Nack()
				return
			}
			_ = resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				m.Ack()
			} else {
				m.Nack()
			}
		})
	}()
}
