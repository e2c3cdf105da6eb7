// Package httprunner runs each task by POSTing its row to an HTTP endpoint
// configured per task type, for handlers that live in another service.
//
// The request: POST, body the task row as JSON, Content-Type
// application/json, Idempotency-Key the task id (stable across retries, so
// the endpoint can drop duplicates), X-WF-Attempt the attempt number, plus
// the endpoint's configured headers.
//
// The reply decides the outcome:
//
//   - a Wf-Snooze header, whatever the status: a snooze, "come back later"
//     without counting a retry (wftype.SnoozeError), after its delay (a Go
//     duration such as 90s, or seconds); the body's excerpt is the reason.
//   - 429 or 503 with a Retry-After header (seconds, or an HTTP date): a
//     snooze of that delay.
//   - 2xx: the body, one JSON value, is the task's outputs (an empty body
//     means none); a body that is not JSON is a permanent failure.
//   - 408, 429 and 5xx: a retryable failure.
//   - any other status (4xx, and 3xx: redirects are not followed, because a
//     POST redirected as a GET would lose its body): a permanent failure.
//   - no reply (connection error, or the endpoint's Timeout): retryable.
//
// At most 1 MiB of a reply is read. The HTTP runner has no per-record
// channel: an endpoint that has per-record results returns what it wants
// kept in its outputs, and reports progress while it works through the
// API (POST /tasks/{task_id}/progress with a worker token, the owner_id
// and attempts of the row it was sent, and a JSON object of counts that is
// merged into the task's progress). A handler that needs the detailed
// (gcs_detailed) report of every record runs as an exec child instead,
// writing envelopes to file descriptor 3, locally or under `wf exec`.
package httprunner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"

	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// Defaults, filled in by Config.withDefaults.
const (
	// DefaultTimeout bounds one request, reply included.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes is the most of a reply that is read.
	DefaultMaxResponseBytes = 1 << 20
	// DefaultExcerptBytes is how much of an error reply's body an error quotes.
	DefaultExcerptBytes = 512
)

// Endpoint is where the tasks of one type are sent.
type Endpoint struct {
	// URL is the absolute http or https URL to POST to. Required.
	URL string
	// Headers are added to every request. A value may reference environment
	// variables as ${NAME}; they are expanded once, when the runner is built,
	// so secrets need not live in specs.
	Headers map[string]string
	// Timeout bounds one request, reply included; zero means DefaultTimeout.
	Timeout time.Duration
}

// Config configures the HTTP runner.
type Config struct {
	// Handlers maps each task type this runner serves to its endpoint. The
	// engine fills it from the compiled specs.
	Handlers map[string]Endpoint
	// MaxResponseBytes is the most of a reply that is read; a 2xx reply that
	// is longer fails the task permanently. Zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// ExcerptBytes is how much of an error reply's body an error quotes. Zero
	// means DefaultExcerptBytes.
	ExcerptBytes int
	// LookupEnv resolves ${NAME} in header values; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Transport sends the requests; nil means a transport cloned from
	// http.DefaultTransport (proxy from the environment, keep-alives, HTTP/2)
	// with more idle connections per host.
	Transport http.RoundTripper
}

// withDefaults returns cfg with every unset field given its default; it is
// the one place where the runner's defaults live.
func (cfg Config) withDefaults() Config {
	handlers := make(map[string]Endpoint, len(cfg.Handlers))
	for taskType, ep := range cfg.Handlers {
		ep.Timeout = cmp.Or(ep.Timeout, DefaultTimeout)
		handlers[taskType] = ep
	}
	cfg.Handlers = handlers
	cfg.MaxResponseBytes = cmp.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	cfg.ExcerptBytes = cmp.Or(cfg.ExcerptBytes, DefaultExcerptBytes)
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 32
		t.ResponseHeaderTimeout = 0 // each request's Timeout covers it
		cfg.Transport = t
	}
	return cfg
}

// endpoint is an Endpoint with its URL parsed and its headers expanded.
type endpoint struct {
	url     string
	display string // the URL without user info, query or fragment, for messages
	headers http.Header
	timeout time.Duration
}

// The runner implements the interface the dispatcher uses.
var _ runners.Runner = (*Runner)(nil)

// Runner runs ASYNCHRONOUS tasks by POSTing them to endpoints (the seed's
// BackgroundRunner, priority 100).
type Runner struct {
	client       *http.Client
	endpoints    map[string]endpoint
	maxResponse  int64
	excerptBytes int
}

// New returns a runner for the task types in cfg.Handlers. It checks every
// URL and expands every header once, and reports every problem at once: an
// unset environment variable is an error, not an empty header.
func New(cfg Config) (*Runner, error) {
	cfg = cfg.withDefaults()
	r := &Runner{
		// One client for every endpoint, so connections are pooled. Timeouts
		// come from each request's context; redirects are returned, not followed.
		client: &http.Client{
			Transport:     cfg.Transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		endpoints:    make(map[string]endpoint, len(cfg.Handlers)),
		maxResponse:  cfg.MaxResponseBytes,
		excerptBytes: cfg.ExcerptBytes,
	}
	var errs []error
	if cfg.MaxResponseBytes < 0 || cfg.ExcerptBytes < 0 {
		errs = append(errs, errors.New("the response and excerpt limits must be more than zero"))
	}
	for _, taskType := range slices.Sorted(maps.Keys(cfg.Handlers)) {
		ep, err := buildEndpoint(cfg.Handlers[taskType], cfg.LookupEnv)
		if err != nil {
			errs = append(errs, fmt.Errorf("task type %q: %w", taskType, err))
			continue
		}
		r.endpoints[taskType] = ep
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("error building http runner: %w", err)
	}
	return r, nil
}

// buildEndpoint validates one endpoint and expands its headers.
func buildEndpoint(ep Endpoint, lookup func(string) (string, bool)) (endpoint, error) {
	u, err := url.Parse(ep.URL)
	if err != nil {
		return endpoint{}, fmt.Errorf("URL %q is invalid: %w", ep.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return endpoint{}, fmt.Errorf("URL %q must be an absolute http or https URL", ep.URL)
	}
	if ep.Timeout < 0 {
		return endpoint{}, fmt.Errorf("timeout is %s, want more than zero", ep.Timeout)
	}
	headers := http.Header{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(ep.Headers)) {
		value, err := expandEnv(ep.Headers[name], lookup)
		if err != nil {
			errs = append(errs, fmt.Errorf("header %q: %w", name, err))
			continue
		}
		headers.Set(name, value)
	}
	if err := errors.Join(errs...); err != nil {
		return endpoint{}, err
	}
	display := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return endpoint{url: u.String(), display: display.String(), headers: headers, timeout: ep.Timeout}, nil
}

// expandEnv replaces each ${NAME} in s with the variable's value. Only the
// braced form is expanded, so a lone $ in a token stays as it is; an unset
// variable or a malformed reference is an error.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var sb strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			sb.WriteString(s)
			return sb.String(), nil
		}
		sb.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q has a ${ without a closing }", s)
		}
		name := s[i+2 : i+end]
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s} is not a valid variable reference, want ${NAME} with letters, digits and _", name)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("references ${%s}, which is not set", name)
		}
		sb.WriteString(v)
		s = s[i+end+1:]
	}
}

// validEnvName reports whether name is a letter or _ followed by letters,
// digits and _.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Name implements runners.Runner.
func (r *Runner) Name() string { return "http" }

// Priority implements runners.Runner: background work, after any remote-job
// runner (10).
func (r *Runner) Priority() int { return 100 }

// CanHandle implements runners.Runner: ASYNCHRONOUS tasks of a configured type.
func (r *Runner) CanHandle(mode wftype.ExecutionMode, taskType string) bool {
	_, ok := r.endpoints[taskType]
	return ok && mode == wftype.ModeAsync
}

// Run implements runners.Runner; the package comment describes the protocol.
// It does not check the task's mode, so the synchronous runner can delegate
// to it. rep is unused: the HTTP protocol has no per-record channel.
func (r *Runner) Run(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	ep, ok := r.endpoints[task.TaskType]
	if !ok {
		return nil, wftype.Permanent(fmt.Errorf("error running http handler: no endpoint is configured for task type %q", task.TaskType))
	}
	out, err := r.post(ctx, ep, task)
	if err != nil {
		return nil, fmt.Errorf("error running http handler for task type %q: %w", task.TaskType, err)
	}
	return out, nil
}

// post sends the task and interprets the reply.
func (r *Runner) post(ctx context.Context, ep endpoint, task *wftype.Task) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(task)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error encoding the task row: %w", err))
	}
	reqCtx, cancel := context.WithTimeout(ctx, ep.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, ep.url, bytes.NewReader(body))
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error building the request: %w", err))
	}
	req.Header = ep.headers.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", task.ID.String())
	req.Header.Set("X-WF-Attempt", strconv.Itoa(task.Attempts))
	// The run's span, when traced: the endpoint's spans join its trace.
	tracing.Inject(ctx, propagation.HeaderCarrier(req.Header))

	resp, err := r.client.Do(req)
	if err != nil {
		return nil, r.requestError(ctx, ep, err)
	}
	defer resp.Body.Close()
	reply, readErr := io.ReadAll(io.LimitReader(resp.Body, r.maxResponse+1))
	tooLong := int64(len(reply)) > r.maxResponse
	reply = reply[:min(int64(len(reply)), r.maxResponse)]

	status := fmt.Sprintf("%s answered %s", ep.display, resp.Status)
	if err := snoozeReply(resp, status, r.excerpt(reply)); err != nil {
		return nil, err
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		if readErr != nil {
			return nil, r.requestError(ctx, ep, fmt.Errorf("error reading the reply: %w", readErr))
		}
		if tooLong {
			return nil, wftype.Permanent(fmt.Errorf("%s with a body longer than %d bytes", status, r.maxResponse))
		}
		trimmed := bytes.TrimSpace(reply)
		if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
			return nil, nil
		}
		if !json.Valid(trimmed) {
			return nil, wftype.Permanent(fmt.Errorf("%s with a body that is not JSON: %s", status, r.excerpt(reply)))
		}
		return json.RawMessage(trimmed), nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return nil, fmt.Errorf("%s: %s", status, r.excerpt(reply))
	case code >= 300 && code < 400:
		return nil, wftype.Permanent(fmt.Errorf("%s to %q; redirects are not followed, configure the final URL", status, resp.Header.Get("Location")))
	default:
		return nil, wftype.Permanent(fmt.Errorf("%s: %s", status, r.excerpt(reply)))
	}
}

// requestError describes a request that got no usable reply; it is always
// retryable. When the task's own context is done its error is wrapped, so
// callers can tell a cancelled task from a timed-out request.
func (r *Runner) requestError(ctx context.Context, ep endpoint, err error) error {
	// *url.Error quotes the full URL, whose query may hold a secret; the
	// messages below name ep.display instead.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("the request to %s was stopped: %w", ep.display, ctxErr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the request to %s timed out after %s: %w", ep.display, ep.timeout, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return fmt.Errorf("the request to %s timed out: %w", ep.display, err)
	}
	return fmt.Errorf("the request to %s failed: %w", ep.display, err)
}

// excerpt quotes at most ExcerptBytes of a reply body, cut at a rune boundary.
func (r *Runner) excerpt(body []byte) string {
	text := strings.TrimSpace(string(body))
	if text == "" {
		return "(empty body)"
	}
	if len(text) <= r.excerptBytes {
		return text
	}
	cut := r.excerptBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "… (truncated)"
}

// SnoozeHeader is the reply header with which an endpoint snoozes its task.
const SnoozeHeader = "Wf-Snooze"

// snoozeReply returns the snooze a reply asks for, or nil: a Wf-Snooze
// header, or a 429 or 503 with Retry-After.
func snoozeReply(resp *http.Response, status, excerpt string) error {
	reason := status
	if excerpt != "" {
		reason += ": " + excerpt
	}
	if v, ok := resp.Header[SnoozeHeader]; ok {
		text := ""
		if len(v) > 0 {
			text = strings.TrimSpace(v[0])
		}
		d, err := wftype.ParseSnoozeDelay(text)
		if err != nil {
			reason += "; " + err.Error()
		}
		return wftype.Snooze(d, reason)
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return nil
	}
	after := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if after == "" {
		return nil
	}
	if secs, err := strconv.ParseInt(after, 10, 64); err == nil && secs >= 0 {
		return wftype.Snooze(time.Duration(min(secs, int64(wftype.MaxSnoozeDelay.Seconds())))*time.Second, reason)
	}
	if at, err := http.ParseTime(after); err == nil {
		return wftype.Snooze(time.Until(at), reason)
	}
	return nil // a Retry-After that says nothing usable: a plain retryable failure
}
