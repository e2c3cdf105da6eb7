// Package redact hides the credentials that URLs carry — a password in the
// user information (https://user:pass@host/…) and signed or token query
// parameters (X-Goog-Signature, X-Amz-Signature, token=, access_token=,
// sig=, api_key=, …) — wherever wf shows a task's inputs, outputs or errors
// (the HTTP API, the CLI, the dashboard, logs and events). The task keeps
// its inputs as given, since its handler needs them; only what is shown is
// redacted.
package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"

	"github.com/wfhq/wf/wftype"
)

// Mask replaces a hidden credential.
const Mask = "REDACTED"

// urlRE finds URLs in free text: a scheme, "://", then anything up to white
// space or a quote or bracket that ends a URL written in text or JSON.
var urlRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]{0,15}://[^\s"'<>()\[\]{}\\]+`)

// sensitiveParams are query parameter names (lower case) whose values are
// credentials; any name ending in one of sensitiveSuffixes is too.
var sensitiveParams = map[string]bool{
	"token": true, "access_token": true, "id_token": true, "refresh_token": true, "auth": true,
	"sig": true, "signature": true, "key": true, "api_key": true, "apikey": true,
	"password": true, "passwd": true, "pwd": true, "secret": true, "client_secret": true,
	"x-goog-signature": true, "x-goog-credential": true, "x-amz-signature": true,
	"x-amz-credential": true, "x-amz-security-token": true, "googleaccessid": true,
}

var sensitiveSuffixes = []string{"token", "signature", "secret", "password", "credential", "_key", "-key"}

// sensitive reports whether a query parameter's value is a credential.
func sensitive(name string) bool {
	n := strings.ToLower(name)
	if sensitiveParams[n] {
		return true
	}
	for _, s := range sensitiveSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// URL returns u with its password and credential query values replaced by
// Mask; a text that does not parse as a URL is returned as it is.
func URL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		return u
	}
	changed := false
	if p.User != nil {
		if _, has := p.User.Password(); has {
			p.User = url.UserPassword(p.User.Username(), Mask)
			changed = true
		}
	}
	if p.RawQuery != "" {
		parts := strings.Split(p.RawQuery, "&")
		for i, part := range parts {
			name, _, hasValue := strings.Cut(part, "=")
			if dec, err := url.QueryUnescape(name); err == nil {
				name = dec
			}
			if hasValue && sensitive(name) {
				parts[i] = part[:strings.IndexByte(part, '=')+1] + Mask
				changed = true
			}
		}
		p.RawQuery = strings.Join(parts, "&")
	}
	if !changed {
		return u
	}
	return p.String()
}

// String redacts every URL found in s (an error message, a log line).
func String(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlRE.ReplaceAllStringFunc(s, func(m string) string {
		// Punctuation that ends a sentence or a clause ("…/x?token=t: 403")
		// is the text's, not the URL's.
		u := strings.TrimRight(m, ".,;:!?")
		return URL(u) + m[len(u):]
	})
}

// Ptr is String for an optional text.
func Ptr(s *string) *string {
	if s == nil {
		return nil
	}
	r := String(*s)
	if r == *s {
		return s
	}
	return &r
}

// JSON redacts every URL in the string values of a JSON document (object
// keys are kept). A document that does not decode is returned as it is;
// one with nothing to redact is returned unchanged, byte for byte.
func JSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !bytes.Contains(raw, []byte("://")) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	changed := false
	v = walk(v, &changed)
	if !changed {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// walk redacts the strings of a decoded JSON value.
func walk(v any, changed *bool) any {
	switch t := v.(type) {
	case string:
		r := String(t)
		if r != t {
			*changed = true
		}
		return r
	case []any:
		for i := range t {
			t[i] = walk(t[i], changed)
		}
	case map[string]any:
		for k := range t {
			t[k] = walk(t[k], changed)
		}
	}
	return v
}

// Task returns t as it may be shown: its inputs, outputs, error and dedup
// key (often made of the inputs) redacted; the row itself is not changed.
func Task(t wftype.Task) wftype.Task {
	t.Inputs, t.Outputs, t.Error, t.DedupKey = JSON(t.Inputs), JSON(t.Outputs), Ptr(t.Error), Ptr(t.DedupKey)
	return t
}

// Attempts returns an attempt history as it may be shown: its errors
// redacted.
func Attempts(as []wftype.Attempt) []wftype.Attempt {
	out := make([]wftype.Attempt, len(as))
	for i, a := range as {
		a.Error = Ptr(a.Error)
		out[i] = a
	}
	return out
}
