// Package ui is wf's web dashboard: plain HTML, CSS and JavaScript embedded
// in the binary (no build step), served under /ui/ by the HTTP API. The
// pages hold no data; their script calls the API with the session cookie
// that POST /ui/session hands out, so every read and action goes through
// the API's own authentication, roles, tenant scope and CSRF check.
package ui

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// Handler serves the dashboard's files under /ui/: /ui/ is the page,
// /ui/<file> its assets. Unknown files answer 404. Every answer forbids
// framing and inline scripts (a strict Content-Security-Policy), so a
// value shown in the page can never run as code.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded folder is there by construction
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/ui/")
		if name == "" {
			name = "index.html"
		}
		raw, err := fs.ReadFile(files, name)
		if err != nil || strings.Contains(name, "/") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("no such dashboard file; the dashboard is at /ui/\n"))
			return
		}
		h := w.Header()
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.Set("Content-Type", ct)
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
			"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		_, _ = w.Write(raw)
	})
}
