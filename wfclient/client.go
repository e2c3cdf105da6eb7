// Package wfclient is a Go client of wf's HTTP API, written against its
// OpenAPI document (schemas/openapi.json, served at /openapi.json): create,
// read, wait for, list and cancel tasks, submit ingestions, emit events,
// and the admin operations (pause and resume, bulk cancel and requeue). It
// imports nothing from wf but wftype, whose view types (Task, Submission,
// Event, …) are the very ones the server writes, so a service that only
// calls wf over HTTP pulls in the standard library and github.com/google/uuid
// besides. Errors wf answers with are *Problem values (RFC 9457).
package wfclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures a Client. BaseURL and Token are required.
type Config struct {
	// BaseURL is the server's root, such as http://127.0.0.1:8080.
	BaseURL string
	// Token is a bearer token whose role allows the calls made.
	Token string
	// HTTPClient sends the requests; nil means one with a 30 s timeout.
	HTTPClient *http.Client
}

// Client calls one wf server. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("error creating the wf client: base URL %q is not an http(s) URL with a host", cfg.BaseURL)
	}
	if cfg.Token == "" {
		return nil, errors.New("error creating the wf client: a token is required")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: u, token: cfg.Token, http: hc}, nil
}

// Problem is an error answer of wf (an RFC 9457 problem document). A
// request that got no answer fails with the transport's error wrapped
// instead (errors.Is finds context.DeadlineExceeded, net errors…).
type Problem struct {
	Status int          `json:"status"`
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Detail string       `json:"detail"`
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError is one problem with a request: a JSON pointer into the body,
// or a query or path parameter.
type FieldError struct {
	Pointer   string `json:"pointer,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	Message   string `json:"message"`
}

// Error implements error.
func (p *Problem) Error() string {
	if p.Detail == "" {
		return fmt.Sprintf("wf answered %d %s", p.Status, p.Title)
	}
	return fmt.Sprintf("wf answered %d %s: %s", p.Status, p.Title, p.Detail)
}

// IsNotFound reports whether err is wf's 404 (no such resource, or
// another tenant's).
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsConflict reports whether err is wf's 409 (the change does not apply to
// the resource's current state).
func IsConflict(err error) bool { return statusOf(err) == http.StatusConflict }

func statusOf(err error) int {
	var p *Problem
	if errors.As(err, &p) {
		return p.Status
	}
	return 0
}

// do sends one request with a JSON body (nil: none) and decodes a JSON
// answer into out (nil: ignore it).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("error encoding the request to %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("error building the request to %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("error sending %s %s to wf (no answer): %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return &Problem{Status: res.StatusCode, Title: "Unreadable answer", Detail: err.Error()}
	}
	if res.StatusCode >= 400 {
		p := &Problem{}
		if json.Unmarshal(raw, p) != nil || p.Title == "" {
			p = &Problem{Title: http.StatusText(res.StatusCode), Detail: strings.TrimSpace(string(raw[:min(len(raw), 500)]))}
		}
		p.Status = res.StatusCode
		return p
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("error decoding the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// escape quotes one path segment.
// call does one request (as do) and returns its answer, decoded into a T.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (T, error) {
	var out T
	err := c.do(ctx, method, path, query, body, &out)
	return out, err
}

func escape(s string) string { return url.PathEscape(s) }
