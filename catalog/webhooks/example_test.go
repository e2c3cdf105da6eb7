package webhooks_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/wfhq/wf/catalog/webhooks"
)

// ExampleVerify is a receiver of wf's webhooks: it checks each delivery's
// signature (and its age, against replays) before it trusts the body.
func ExampleVerify() {
	secret := []byte("0123456789abcdef") // the secret given to `wf webhooks add`
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		err = webhooks.Verify(secret, r.Header.Get(webhooks.HeaderTimestamp), r.Header.Get(webhooks.HeaderSignature),
			body, time.Now(), webhooks.DefaultTolerance)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Println("verified", r.Header.Get(webhooks.HeaderEventType))
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(receiver)
	defer srv.Close()

	// What wf's webhook_delivery handler sends.
	body := `{"event_id":"e1","event_type":"catalog.created","payload":{}}`
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set(webhooks.HeaderEventType, "catalog.created")
	req.Header.Set(webhooks.HeaderTimestamp, ts)
	req.Header.Set(webhooks.HeaderSignature, webhooks.Sign(secret, ts, []byte(body)))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println(res.StatusCode)

	// A forged signature is refused.
	req, _ = http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set(webhooks.HeaderTimestamp, ts)
	req.Header.Set(webhooks.HeaderSignature, "sha256=00")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println(res.StatusCode)
	// Output:
	// verified catalog.created
	// 204
	// 401
}
