package api

import (
	"cmp"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/api/ui"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/internal/tracing"
)

// handlerFunc is an API operation: it writes its answer and returns nil, or
// returns the error to answer with (see toProblem).
type handlerFunc func(w http.ResponseWriter, r *http.Request, p *principal) error

// route is one operation: its method and path pattern (net/http's), the
// roles that may call it (none: public, no token needed) and its handler.
type route struct {
	method  string
	pattern string
	roles   []config.Role
	handle  handlerFunc
}

var (
	anyRole     = []config.Role{config.RoleClient, config.RoleWorker, config.RoleAdmin}
	clientRoles = []config.Role{config.RoleClient, config.RoleAdmin}
	workerRoles = []config.Role{config.RoleWorker}
	adminRoles  = []config.Role{config.RoleAdmin}
)

// tilePattern is the tile route's net/http pattern: a wildcard fills a whole
// path segment, so "{y}" holds "{y}.mvt" and getTile reads the suffix.
const tilePattern = "/catalogs/{catalog_id}/collections/{collection_id}/tiles/{z}/{x}/{y}"

// documentedPaths maps the patterns whose OpenAPI path differs to it.
var documentedPaths = map[string]string{tilePattern: tilePattern + ".mvt"}

// routeTable lists every operation of the API; the OpenAPI document has one
// operation for each (checked by a test).
func (s *Server) routeTable() []route {
	return []route{
		{"GET", "/healthz", nil, s.healthz},
		{"GET", "/readyz", nil, s.readyz},
		{"GET", "/metrics", nil, s.getMetrics},
		{"GET", "/openapi.json", nil, s.getOpenAPI},

		{"POST", "/catalogs", clientRoles, s.createCatalog},
		{"GET", "/catalogs", clientRoles, s.listCatalogs},
		{"GET", "/catalogs/{catalog_id}", clientRoles, s.getCatalog},
		{"DELETE", "/catalogs/{catalog_id}", clientRoles, s.deleteCatalog},
		{"POST", "/catalogs/{catalog_id}/collections", clientRoles, s.createCollection},
		{"GET", "/catalogs/{catalog_id}/collections", clientRoles, s.listCollections},
		{"GET", "/catalogs/{catalog_id}/collections/{collection_id}", clientRoles, s.getCollection},
		{"DELETE", "/catalogs/{catalog_id}/collections/{collection_id}", clientRoles, s.deleteCollection},
		{"GET", "/catalogs/{catalog_id}/conformance", clientRoles, s.getConformance},
		{"GET", "/catalogs/{catalog_id}/collections/{collection_id}/items", clientRoles, s.listFeatures},
		{"GET", "/catalogs/{catalog_id}/collections/{collection_id}/items/{feature_id}", clientRoles, s.getFeature},
		{"GET", "/catalogs/{catalog_id}/collections/{collection_id}/queryables", clientRoles, s.getQueryables},
		{"GET", tilePattern, clientRoles, s.getTile},
		{"POST", "/catalogs/{catalog_id}/assets", clientRoles, s.createAsset},
		{"GET", "/catalogs/{catalog_id}/assets", clientRoles, s.listAssets},
		{"GET", "/catalogs/{catalog_id}/assets/{asset_id}", clientRoles, s.getAsset},
		{"PATCH", "/catalogs/{catalog_id}/assets/{asset_id}", clientRoles, s.updateAsset},
		{"DELETE", "/catalogs/{catalog_id}/assets/{asset_id}", clientRoles, s.deleteAsset},

		{"POST", "/ingestion/{catalog_id}/{collection_id}", clientRoles, s.submitIngestion},

		{"POST", "/tasks", clientRoles, s.createTask},
		{"GET", "/tasks", anyRole, s.listTasks},
		{"GET", "/tasks/{task_id}", anyRole, s.getTask},
		{"GET", "/tasks/{task_id}/records", anyRole, s.listTaskRecords},
		{"GET", "/tasks/{task_id}/files/{name}", anyRole, s.getTaskFile},
		{"POST", "/tasks/{task_id}/progress", workerRoles, leased(s, s.reportProgress)},
		{"POST", "/tasks/{task_id}/complete", workerRoles, leased(s, s.completeTask)},
		{"POST", "/tasks/{task_id}/fail", workerRoles, leased(s, s.failTask)},
		{"POST", "/tasks/{task_id}/cancel", clientRoles, s.cancelTask},

		{"POST", "/events", clientRoles, s.emitEvent},

		{"POST", "/workflows/{name}/runs", clientRoles, s.startWorkflowRun},
		{"GET", "/workflows/runs", anyRole, s.listWorkflowRuns},
		{"GET", "/workflows/runs/{run_id}", anyRole, s.getWorkflowRun},
		{"POST", "/workflows/runs/{run_id}/cancel", clientRoles, s.cancelWorkflowRun},
		{"POST", "/workflows/runs/{run_id}/retry", clientRoles, s.retryWorkflowRun},
		{"POST", "/workflows/runs/{run_id}/signals/{name}", clientRoles, s.signalWorkflowRun},
		// Pub/Sub pushes: authenticated by their OIDC token, not a wf token.
		{"POST", "/hooks/gcs", nil, s.receiveStoragePush},

		{"POST", "/admin/tasks/{task_id}/requeue", adminRoles, s.requeueTask},
		{"POST", "/admin/tasks/cancel", adminRoles, s.cancelTasks},
		{"POST", "/admin/tasks/requeue", adminRoles, s.requeueTasks},
		{"POST", "/admin/events/{event_id}/requeue", adminRoles, s.requeueEvent},
		{"GET", "/admin/dead-letters", adminRoles, s.listDeadLetters},
		{"POST", "/admin/dead-letters/requeue", adminRoles, s.requeueDeadLetters},
		{"GET", "/admin/webhooks", adminRoles, s.listWebhooks},
		{"GET", "/admin/pauses", adminRoles, s.listPauses},
		{"POST", "/admin/pauses", adminRoles, s.pauseQueue},
		{"DELETE", "/admin/pauses/{kind}/{name}", adminRoles, s.resumeQueue},

		{"GET", "/stats", anyRole, s.getStats},

		{"POST", "/ui/session", nil, s.createSession},
		{"GET", "/ui/session", nil, s.getSession},
		{"DELETE", "/ui/session", anyRole, s.deleteSession},
	}
}

// routes builds the handler: the router, wrapped in path canonicalisation,
// panic recovery and an access log.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routeTable() {
		mux.Handle(rt.method+" "+rt.pattern, s.wrap(rt))
	}
	// The dashboard's pages and assets (no token: they hold no data; the
	// pages call the API above with the session cookie).
	mux.Handle("GET /ui/", ui.Handler())
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	return s.logRequests(s.recoverPanics(s.canonical(s.problemsForMux(mux))))
}

// wrap authenticates and authorises a request, then runs the operation and
// turns its error into a problem document.
func (s *Server) wrap(rt route) http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p *principal
		if rt.roles != nil {
			var prob *problem
			if p, prob = s.authenticate(r); prob != nil {
				writeProblem(w, r, prob)
				return
			}
			if prob = authorize(p, rt.roles); prob != nil {
				writeProblem(w, r, prob)
				return
			}
			if prob = checkSessionWrite(r, p, rt); prob != nil {
				writeProblem(w, r, prob)
				return
			}
		}
		if p == nil || p.role != config.RoleAdmin { // the operator's tokens see the paths
			w = &shownWriter{ResponseWriter: w, folders: s.cfg.Folders, own: s.ownTenants(r, p)}
		}
		if err := rt.handle(w, r, p); err != nil {
			writeProblem(w, r, s.toProblem(r, err))
		}
	})
	if s.cfg.TracerProvider == nil || rt.roles == nil {
		// Tracing off, or a public route (health, metrics, the OpenAPI
		// document: probes and scrapes would each start a trace).
		return h
	}
	return s.traced(rt, h)
}

// traced gives each request of rt a server span named after the route
// ("POST /tasks"), in the trace of the caller's traceparent header when it
// sends one: the tasks and events the request creates keep its context.
func (s *Server) traced(rt route, next http.Handler) http.Handler {
	tracer := tracing.Tracer(s.cfg.TracerProvider)
	name := rt.method + " " + rt.pattern
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := tracing.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("http.request.method", r.Method), attribute.String("http.route", rt.pattern),
			attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(ctx))
		status := cmp.Or(sw.status, http.StatusOK)
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}

// canonical refuses request paths that are not in canonical form (dot
// segments, repeated or encoded slashes) with a 400, instead of the router's
// redirect: an id in a path can never reach another resource.
func (s *Server) canonical(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		raw := r.URL.RawPath
		lower := strings.ToLower(raw)
		if p == "" || p[0] != '/' || path.Clean(p) != p && !(strings.HasSuffix(p, "/") && path.Clean(p)+"/" == p) ||
			strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(p, "\\") ||
			strings.ContainsAny(p, "\x00\r\n") {
			p := badRequest("the request path is not in canonical form (no '.' or '..' segments, no repeated or encoded slashes, no control characters)")
			p.Errors = []fieldError{{Parameter: "path", Message: "is not in canonical form"}}
			writeProblem(w, r, p)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// problemsForMux answers the router's own 404 and 405 with problem
// documents: when no pattern matches, the router's answer is recorded (to
// learn its status and Allow header) and replaced.
func (s *Server) problemsForMux(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := &headerRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		switch rec.status {
		case http.StatusMethodNotAllowed:
			p := newProblem(http.StatusMethodNotAllowed, typeMethodNotAllowed, "Method not allowed",
				"%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, rec.header.Get("Allow"))
			p.header = http.Header{"Allow": {rec.header.Get("Allow")}}
			writeProblem(w, r, p)
		default:
			writeProblem(w, r, notFound("no operation at %s %s; see /openapi.json", r.Method, r.URL.Path))
		}
	})
}

// headerRecorder captures a handler's status and headers and drops its body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return len(b), nil
}
func (h *headerRecorder) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

// recoverPanics turns a panicking handler into a 500 problem (the stack goes
// to the log, never to the client).
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("HTTP API handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeProblem(w, r, newProblem(http.StatusInternalServerError, typeInternal, "Internal error",
					"the server could not complete the request; the error is in its log"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status a handler sent, for the access log.
// shownWriter hides the server's folders (Config.Folders) in the JSON
// answers of an operation, problems included: whatever a task's outputs or
// errors, a workflow run or an asset say, a client (or worker) sees its own
// files relative to its tenant's folder and none of the server's folders;
// admin tokens, the operator's, see the paths as they are. Each answer is
// encoded in one Write (writeJSON, writeProblem).
type shownWriter struct {
	http.ResponseWriter
	folders *redact.Folders
	own     func(tenant string) bool
}

func (w *shownWriter) Write(b []byte) (int, error) {
	if !strings.Contains(w.Header().Get("Content-Type"), "json") {
		return w.ResponseWriter.Write(b)
	}
	if _, err := w.ResponseWriter.Write(w.folders.Bytes(b, w.own)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// ownTenants says which tenants' folders p reads as its own, so that their
// paths are shown relative to them: those of the catalogs a limited token
// may use (looked up once per tenant and request, only when an answer
// names such a folder). An unlimited token, which reads many tenants, and
// an anonymous caller have none.
func (s *Server) ownTenants(r *http.Request, p *principal) func(string) bool {
	if p == nil || !p.limited() {
		return nil
	}
	seen := map[string]bool{}
	return func(schema string) bool {
		own, ok := seen[schema]
		if !ok {
			id, err := s.store.Catalog().CatalogIDBySchema(r.Context(), schema)
			own = err == nil && p.canUseCatalog(id)
			seen[schema] = own
		}
		return own
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs every request at debug level (4xx at info, 5xx at warn)
// and counts it in the metrics.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		took := time.Since(start)
		s.metrics.ObserveRequest(routeLabel(r.Pattern), sw.status, took)
		s.log.Log(r.Context(), slogLevelFor(sw.status), "HTTP request", "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "took", took.Round(time.Microsecond).String())
	})
}

// routeLabel is a route's name in the metrics: its pattern without Go's
// exact-match marker ("GET /{$}" is "GET /").
func routeLabel(pattern string) string {
	return strings.ReplaceAll(pattern, "{$}", "")
}

// slogLevelFor is the log level of a request by its answer's status.
func slogLevelFor(status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelWarn
	case status >= 400:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
