// Package api is wf's HTTP API: the ingestion gateway, the catalog registry,
// tasks (create, read, list, remote-worker updates, cancel), events, admin
// operations on dead letters, and the operational endpoints (health,
// readiness, Prometheus metrics, the OpenAPI document).
//
// One file per operation: routes.go lists every route with the roles that
// may call it, and each handler lives in the file named after it. Handlers
// return errors; problem.go turns them into RFC 9457 problem documents, so
// every error the API gives is application/problem+json. Rows from the store
// are converted to the API's own JSON shapes in views.go, never encoded as
// they are. The contract is schemas/openapi.json, served at /openapi.json
// and checked against every response in the tests.
package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/metrics"
	"github.com/wfhq/wf/engine/readreplica"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/worker"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/schemas"
	"github.com/wfhq/wf/wftype"
)

// OpenAPIFile is the name of the API's contract in schemas.FS.
const OpenAPIFile = "openapi.json"

// Config configures the API server. Pool and Specs are required; zero fields
// take the defaults noted.
type Config struct {
	// Pool is the database.
	Pool *pgxpool.Pool
	// CatalogPool is the catalog's own database (catalog.database_url),
	// whose store Store carries (store.WithCatalog); /readyz checks it as
	// it checks Pool. Nil: the catalog lives in Pool's database.
	CatalogPool *pgxpool.Pool
	// Specs are the compiled specs: task types and their input schemas.
	Specs *spec.Set
	// Channels are the NOTIFY channel names. Default the seed's.
	Channels store.Channels
	// Reads, when set, routes the reads that may lag (task lists, the
	// overview, dead letters) to a read replica while it keeps up
	// (database.read_url); nil: every read goes to Store.
	Reads *readreplica.Monitor
	// Store, Client and Emitter are the engine's (engine.Engine's Store,
	// Client and Emitter), so the API and the engine share them; nil builds
	// them on Pool, with Specs and Channels.
	Store   *store.Store
	Client  *client.Client
	Emitter *events.Emitter
	// Tokens are the bearer tokens (hashed). No tokens: every route that
	// needs one answers 401.
	Tokens []config.Token
	// HTTP holds the body limit and the read and write timeouts. Zero fields
	// take config.Default()'s (1 MiB, 15s, 60s).
	HTTP config.HTTP
	// IdleTimeout closes idle keep-alive connections. Default 2 minutes.
	IdleTimeout time.Duration
	// Owner identifies this instance on the SYNCHRONOUS tasks it runs
	// inline. Default a random host-pid id.
	Owner string
	// Runners run SYNCHRONOUS tasks inline (the runner set's synchronous
	// runner). Without one, creating a task of a SYNCHRONOUS type answers 501.
	Runners []runners.Runner
	// Rules give the lease, timeout, limits and retry policy of every
	// task type, by pair; nil compiles them from Specs.
	Rules execution.Rules
	// Unserved are the task types this instance cannot run because their
	// service is not configured (engine.Engine's Unserved): GET /readyz
	// lists them with why.
	Unserved []runnerset.Unserved
	// InstanceRuns counts this instance's runs against each task type's
	// concurrency.per_instance: the engine's (engine.Engine's
	// InstanceRuns), whose dispatcher takes room from it too, so that the
	// cap holds for the SYNCHRONOUS runs and the dispatcher's together;
	// nil: one of the server's own (no dispatcher runs in its process).
	InstanceRuns *execution.InstanceRuns
	// Reporters builds the reporters of a SYNCHRONOUS run; nil discards records.
	Reporters func(task *wftype.Task) (reporters.Reporter, error)
	// Metrics, when set, is the metrics the engine also reports to (wf run);
	// nil makes one for the API alone.
	Metrics *metrics.Metrics
	// TileCacheURL is the tile cache the tile endpoint reads and fills
	// (tiles.cache_url): gs://bucket/prefix or file:///folder; "" means
	// tiles.Config's default.
	TileCacheURL string
	// Folders hides the server's folders (files roots, reports, tile
	// cache, data and temporary folders) in every JSON answer but an admin
	// token's: a tenant's paths are shown relative to its folder, others
	// under the folder's name (see internal/redact). Nil hides the
	// temporary folder and a local tile cache only.
	Folders *redact.Folders
	// StoragePush receives the Pub/Sub pushes of the catalogs' Cloud
	// Storage notifications on POST /hooks/gcs; nil answers 404 there.
	StoragePush *gcp.PushReceiver
	// Workflows starts and controls workflow runs; default one built on the
	// server's store, client and emitter.
	Workflows *workflow.Workflows
	// Files opens the tasks' files (files.local_roots, each tenant in its
	// folder): GET /tasks/{task_id}/files/export reads an export through
	// it, as the task's tenant. Nil serves no export.
	Files *objio.Opener
	// ReportsURL is where the detailed reporter writes (report.bucket_url:
	// file:///folder or gs://bucket/prefix): GET /tasks/{task_id}/files/report
	// reads only reports there. Empty serves no report.
	ReportsURL string
	// BaseURL, when set (https://wf.example.com), makes status_url and
	// Location absolute; otherwise they are paths from the server's root.
	BaseURL string
	// Clock is the engine's clock: a PENDING task's waiting_reason says
	// not_due by it, as the engine's claims decide. Default the wall clock,
	// whose statements read the database's clock.
	Clock  clock.Clock
	Logger *slog.Logger
	// TracerProvider, when set (tracing on), gives every authenticated
	// route a server span that continues the caller's traceparent; the
	// tasks and events a request creates keep its context. Nil: off.
	TracerProvider trace.TracerProvider
}

// Server is the HTTP API.
type Server struct {
	cfg      Config
	log      *slog.Logger
	store    *store.Store
	client   *client.Client
	emitter  *events.Emitter
	catalogs *registry.Registry
	metrics  *metrics.Metrics
	sync     runners.CapabilityMap
	// syncWorker runs SYNCHRONOUS tasks (see runSync).
	syncWorker *worker.Worker
	openapi    []byte
	maxBody    int64
	// maxDepth is the deepest JSON nesting a body may have (http.max_json_depth).
	maxDepth  int
	handler   http.Handler
	live      routesRef // the routes Serve answers with (reload.go)
	ingestion *spec.TaskType
	workflows *workflow.Workflows
	// tiles serves the tile endpoint.
	tiles *tiles.Service
}

// New validates cfg, fills its defaults and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.Pool == nil || cfg.Specs == nil {
		return nil, errors.New("error creating the HTTP API: a database pool and specs are required")
	}
	def := config.Default().HTTP
	cfg.HTTP.MaxBodyBytes = cmp.Or(cfg.HTTP.MaxBodyBytes, def.MaxBodyBytes)
	cfg.HTTP.MaxJSONDepth = cmp.Or(cfg.HTTP.MaxJSONDepth, def.MaxJSONDepth)
	cfg.HTTP.ReadTimeout = cmp.Or(cfg.HTTP.ReadTimeout, def.ReadTimeout)
	cfg.HTTP.WriteTimeout = cmp.Or(cfg.HTTP.WriteTimeout, def.WriteTimeout)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, 2*time.Minute)
	if cfg.Folders == nil {
		cfg.Folders = redact.NewFolders(nil, map[string]string{os.TempDir(): "tmp", cfg.TileCacheURL: "tiles"})
	}
	if cfg.Channels.TaskQueued == "" {
		cfg.Channels = store.DefaultChannels
	}
	if cfg.Owner == "" {
		cfg.Owner = engine.NewOwnerID()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.InstanceRuns == nil {
		cfg.InstanceRuns = execution.NewInstanceRuns()
	}
	if cfg.Reporters == nil {
		cfg.Reporters = func(*wftype.Task) (reporters.Reporter, error) { return reporters.Discard{}, nil }
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	doc, err := schemas.Read(OpenAPIFile)
	if err != nil {
		return nil, fmt.Errorf("error creating the HTTP API: %w", err)
	}
	st := cfg.Store
	if st == nil {
		st = store.New(cfg.Pool).WithChannels(cfg.Channels)
	}
	em := cfg.Emitter
	if em == nil {
		em = events.NewEmitter(st)
		if cfg.TracerProvider != nil {
			em = em.WithTracing()
		}
	}
	cl := cfg.Client
	if cl == nil {
		cl = client.New(st, cfg.Specs).WithTracerProvider(cfg.TracerProvider)
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		store:    st,
		client:   cl,
		emitter:  em,
		catalogs: registry.New(st.Catalog(), em).WithFiles(cl), // asset URIs: the tenant's folder, as file inputs
		metrics:  cfg.Metrics,
		openapi:  doc,
		maxBody:  cfg.HTTP.MaxBodyBytes,
		maxDepth: cfg.HTTP.MaxJSONDepth,
	}
	if s.metrics == nil {
		s.metrics = metrics.New(metrics.Config{Store: st})
	}
	if s.workflows = cfg.Workflows; s.workflows == nil {
		if s.workflows, err = workflow.New(workflow.Config{Specs: cfg.Specs, Client: cl, Emitter: em, Logger: cfg.Logger}); err != nil {
			return nil, fmt.Errorf("error creating the HTTP API: %w", err)
		}
		if cfg.Store == nil && len(cfg.Specs.Workflows()) > 0 {
			// Remote workers and synchronous runs finish steps here too.
			s.store = s.store.WithStepHook(s.workflows.Advance)
		}
	}
	if s.tiles, err = tiles.New(tiles.Config{Store: st.Catalog(), Queue: st, CacheURL: cfg.TileCacheURL}); err != nil {
		return nil, fmt.Errorf("error creating the HTTP API: %w", err)
	}
	var syncPairs []runners.Pair
	for _, tt := range cfg.Specs.TaskTypes() {
		if tt.Mode() == wftype.ModeSync {
			syncPairs = append(syncPairs, runners.Pair{Mode: wftype.ModeSync, TaskType: tt.Name()})
		}
	}
	s.sync = runners.BuildCapabilityMap(cfg.Runners, syncPairs)
	if s.cfg.Rules == nil {
		s.cfg.Rules = runnerset.Rules(cfg.Specs, 0)
	}
	if s.syncWorker, err = s.newSyncWorker(); err != nil {
		return nil, fmt.Errorf("error creating the HTTP API: %w", err)
	}
	s.ingestion, _ = cfg.Specs.TaskType(IngestionTaskType)
	if len(cfg.Tokens) == 0 {
		s.log.Warn("the HTTP API has no tokens configured: every route but health, readiness, metrics and the OpenAPI document answers 401")
	}
	s.handler = s.routes()
	return s, nil
}

// Handler returns the API's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics returns the server's metrics; pass it to the engine as its
// execution.Observer so one /metrics shows both.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Owner is the owner id of the SYNCHRONOUS tasks this server runs.
func (s *Server) Owner() string { return s.cfg.Owner }

// httpServer builds the net/http server with the configured timeouts.
func (s *Server) httpServer(ctx context.Context) *http.Server {
	return &http.Server{
		Handler:           http.HandlerFunc(s.serveLive),
		ReadTimeout:       s.cfg.HTTP.ReadTimeout,
		ReadHeaderTimeout: min(s.cfg.HTTP.ReadTimeout, 10*time.Second),
		WriteTimeout:      s.cfg.HTTP.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// Serve answers requests on ln until ctx ends, then shuts down gracefully:
// it stops accepting, lets requests in flight finish for up to grace
// (default 10s), and returns. It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := s.httpServer(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("HTTP API listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("error serving the HTTP API on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(grace, 10*time.Second))
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("error shutting down the HTTP API: %w", err)
	}
	s.log.Info("HTTP API stopped", "addr", ln.Addr().String())
	return nil
}

// Listen opens the TCP listener of addr (host:port), with a clear error.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("error listening on %s for the HTTP API: %w", addr, err)
	}
	return ln, nil
}

// url returns the URL of a path: absolute when BaseURL is set.
func (s *Server) url(path string) string { return s.cfg.BaseURL + path }
