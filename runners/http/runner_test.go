package httprunner_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	httprunner "github.com/wfhq/wf/runners/http"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

// newServer starts a loopback server. Handlers that block also wait on the
// returned channel, which is closed before the server is, so Close never
// waits for a handler whose client went away unnoticed.
func newServer(t *testing.T, h func(stop <-chan struct{}) http.Handler) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(h(stop))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	return srv
}

// blocking is a handler that answers only when its client goes away.
func blocking(stop <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
}

// handler adapts a handler that needs no stop channel.
func handler(h http.HandlerFunc) func(<-chan struct{}) http.Handler {
	return func(<-chan struct{}) http.Handler { return h }
}

func newSuiteRunner(t *testing.T) runners.Runner {
	t.Helper()
	mux := http.NewServeMux()
	srv := newServer(t, func(stop <-chan struct{}) http.Handler {
		mux.Handle("POST /block", blocking(stop))
		return mux
	})
	mux.HandleFunc("POST /succeed", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, runnertest.SucceedOutputs)
	})
	mux.HandleFunc("POST /retry", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "backend unavailable", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("POST /permanent", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "invalid inputs", http.StatusUnprocessableEntity)
	})
	r, err := httprunner.New(httprunner.Config{Handlers: map[string]httprunner.Endpoint{
		runnertest.TypeSucceed:       {URL: srv.URL + "/succeed"},
		runnertest.TypeFailRetryable: {URL: srv.URL + "/retry"},
		runnertest.TypeFailPermanent: {URL: srv.URL + "/permanent"},
		runnertest.TypeBlock:         {URL: srv.URL + "/block"},
		runnertest.TypeRecords:       {URL: srv.URL + "/records"},
	}})
	require.NoError(t, err)
	return r
}

func TestSuite(t *testing.T) {
	t.Parallel()
	runnertest.Run(t, runnertest.Harness{
		Mode:        wftype.ModeAsync,
		NewRunner:   newSuiteRunner,
		SkipRecords: "the HTTP protocol has no per-record channel",
	})
}

// runAgainst runs one task of type "t" against handler h.
func runAgainst(t *testing.T, h http.HandlerFunc, ep httprunner.Endpoint) (json.RawMessage, error) {
	t.Helper()
	srv := newServer(t, handler(h))
	ep.URL = srv.URL + ep.URL
	r, err := httprunner.New(httprunner.Config{Handlers: map[string]httprunner.Endpoint{"t": ep}})
	require.NoError(t, err)
	return r.Run(t.Context(), runnertest.NewTask(wftype.ModeAsync, "t"), reporters.Discard{})
}

func TestRequest(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		got  *http.Request
		body []byte
	)
	srv := newServer(t, handler(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, body = r, b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"rows": 12, "ok": true}`)
	}))
	r, err := httprunner.New(httprunner.Config{
		Handlers: map[string]httprunner.Endpoint{"t": {
			URL:     srv.URL + "/hook?region=eu",
			Headers: map[string]string{"Authorization": "Bearer ${HOOK_TOKEN}", "X-Literal": "a$b {c}"},
		}},
		LookupEnv: func(name string) (string, bool) {
			if name == "HOOK_TOKEN" {
				return "s3cret", true
			}
			return "", false
		},
	})
	require.NoError(t, err)
	task := runnertest.NewTask(wftype.ModeAsync, "t")
	task.Attempts = 2
	out, err := r.Run(t.Context(), task, reporters.Discard{})
	require.NoError(t, err)
	require.JSONEq(t, `{"rows":12,"ok":true}`, string(out))

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "/hook", got.URL.Path)
	require.Equal(t, "eu", got.URL.Query().Get("region"))
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
	require.Equal(t, task.ID.String(), got.Header.Get("Idempotency-Key"))
	require.Equal(t, "2", got.Header.Get("X-WF-Attempt"))
	require.Equal(t, "Bearer s3cret", got.Header.Get("Authorization"))
	require.Equal(t, "a$b {c}", got.Header.Get("X-Literal"), "only ${NAME} is expanded")
	want, err := json.Marshal(task)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(body))
}

func TestReplies(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		status    int
		body      string
		outputs   string // for successes; "" means nil
		permanent bool
		errParts  []string
		header    map[string]string
		snooze    time.Duration // > 0: the reply is a snooze of this delay
	}{
		"200JSON":       {status: 200, body: `{"id": "x"}`, outputs: `{"id":"x"}`},
		"200Array":      {status: 200, body: " [1, 2]\n", outputs: `[1,2]`},
		"200Empty":      {status: 200},
		"204":           {status: 204},
		"202Null":       {status: 202, body: "null"},
		"200NotJSON":    {status: 200, body: "<html>ok</html>", permanent: true, errParts: []string{"200 OK", "not JSON", "<html>ok</html>"}},
		"400":           {status: 400, body: "catalog is required", permanent: true, errParts: []string{"400 Bad Request", "catalog is required"}},
		"404":           {status: 404, permanent: true, errParts: []string{"404 Not Found", "(empty body)"}},
		"408":           {status: 408, errParts: []string{"408 Request Timeout"}},
		"429":           {status: 429, body: "slow down", errParts: []string{"429 Too Many Requests", "slow down"}},
		"500":           {status: 500, body: "boom", errParts: []string{"500 Internal Server Error", "boom"}},
		"503":           {status: 503, errParts: []string{"503 Service Unavailable"}},
		"302":           {status: 302, permanent: true, errParts: []string{"302 Found", "redirects are not followed"}},
		"ExcerptBounds": {status: 400, body: strings.Repeat("é", 2000), permanent: true, errParts: []string{"… (truncated)"}},
		// Snoozes: come back later, without counting a retry.
		"202Snooze":          {status: 202, header: map[string]string{"Wf-Snooze": "90s"}, snooze: 90 * time.Second, errParts: []string{"202 Accepted"}},
		"200SnoozeSeconds":   {status: 200, body: `{"x":1}`, header: map[string]string{"Wf-Snooze": "30"}, snooze: 30 * time.Second, errParts: []string{"snoozed"}},
		"SnoozeUnreadable":   {status: 200, header: map[string]string{"Wf-Snooze": "later"}, snooze: wftype.DefaultSnooze, errParts: []string{"neither a duration"}},
		"429RetryAfter":      {status: 429, body: "slow down", header: map[string]string{"Retry-After": "120"}, snooze: 2 * time.Minute, errParts: []string{"429", "slow down"}},
		"503RetryAfter":      {status: 503, header: map[string]string{"Retry-After": "5"}, snooze: 5 * time.Second, errParts: []string{"503"}},
		"503RetryAfterJunk":  {status: 503, header: map[string]string{"Retry-After": "soon"}, errParts: []string{"503 Service Unavailable"}},
		"500RetryAfterNoOne": {status: 500, header: map[string]string{"Retry-After": "5"}, errParts: []string{"500 Internal Server Error"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := runAgainst(t, func(w http.ResponseWriter, _ *http.Request) {
				if tc.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}, httprunner.Endpoint{URL: "/"})
			if tc.errParts == nil {
				require.NoError(t, err)
				if tc.outputs == "" {
					require.Nil(t, out)
				} else {
					require.JSONEq(t, tc.outputs, string(out))
				}
				return
			}
			require.Error(t, err)
			require.Equal(t, tc.permanent, wftype.IsPermanent(err), "permanent? %v", err)
			sn, snoozed := wftype.SnoozeOf(err)
			require.Equal(t, tc.snooze > 0, snoozed, "snooze? %v", err)
			if snoozed {
				require.Equal(t, tc.snooze, sn.Delay)
			}
			for _, part := range tc.errParts {
				require.ErrorContains(t, err, part)
			}
			require.Less(t, len(err.Error()), httprunner.DefaultExcerptBytes+300)
		})
	}
}

func TestTimeoutRetryable(t *testing.T) {
	t.Parallel()
	srv := newServer(t, blocking)
	r, err := httprunner.New(httprunner.Config{Handlers: map[string]httprunner.Endpoint{
		"t": {URL: srv.URL + "/slow?token=hidden", Timeout: 100 * time.Millisecond},
	}})
	require.NoError(t, err)
	start := time.Now()
	_, err = r.Run(t.Context(), runnertest.NewTask(wftype.ModeAsync, "t"), reporters.Discard{})
	require.Less(t, time.Since(start), 10*time.Second)
	require.ErrorContains(t, err, "timed out after 100ms")
	require.False(t, wftype.IsPermanent(err))
	require.NotContains(t, err.Error(), "hidden", "the query string stays out of messages")
}

func TestConnectionRefusedRetryable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	r, err := httprunner.New(httprunner.Config{Handlers: map[string]httprunner.Endpoint{"t": {URL: "http://" + addr + "/?key=hidden"}}})
	require.NoError(t, err)
	_, err = r.Run(t.Context(), runnertest.NewTask(wftype.ModeAsync, "t"), reporters.Discard{})
	require.ErrorContains(t, err, "failed")
	require.False(t, wftype.IsPermanent(err))
	require.NotContains(t, err.Error(), "hidden")
}

func TestOversizeBodyBounded(t *testing.T) {
	t.Parallel()
	huge := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			chunk := []byte(`"` + strings.Repeat("x", 64<<10))
			for range 160 { // 10 MiB, far more than is read
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}
	_, err := runAgainst(t, huge(200), httprunner.Endpoint{URL: "/"})
	require.ErrorContains(t, err, "body longer than 1048576 bytes")
	require.True(t, wftype.IsPermanent(err))

	_, err = runAgainst(t, huge(500), httprunner.Endpoint{URL: "/"})
	require.ErrorContains(t, err, "500 Internal Server Error")
	require.False(t, wftype.IsPermanent(err))
	require.Less(t, len(err.Error()), httprunner.DefaultExcerptBytes+300)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := httprunner.New(httprunner.Config{
		Handlers: map[string]httprunner.Endpoint{
			"a": {URL: "ftp://example.com/"},
			"b": {URL: "/relative"},
			"c": {URL: "http://example.com/", Headers: map[string]string{"Authorization": "Bearer ${MISSING}"}},
			"d": {URL: "http://example.com/", Headers: map[string]string{"X": "${not valid}"}},
			"e": {URL: "http://example.com/", Headers: map[string]string{"X": "${OPEN"}},
			"f": {URL: "http://example.com/", Timeout: -time.Second},
		},
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	require.ErrorContains(t, err, `task type "a": URL "ftp://example.com/" must be an absolute http or https URL`)
	require.ErrorContains(t, err, `task type "b": URL "/relative"`)
	require.ErrorContains(t, err, `task type "c": header "Authorization": references ${MISSING}, which is not set`)
	require.ErrorContains(t, err, `task type "d": header "X": ${not valid} is not a valid variable reference`)
	require.ErrorContains(t, err, `task type "e": header "X": "${OPEN" has a ${ without a closing }`)
	require.ErrorContains(t, err, `task type "f": timeout is -1s`)

	r, err := httprunner.New(httprunner.Config{Handlers: map[string]httprunner.Endpoint{"a": {URL: "https://example.com/hook"}}})
	require.NoError(t, err)
	require.Equal(t, "http", r.Name())
	require.Equal(t, 100, r.Priority())
}
