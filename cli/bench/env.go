package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbmigrate"
	"github.com/wfhq/wf/internal/localpg"
	"github.com/wfhq/wf/runners/builtin"
)

// serviceName is the service name (NAME) of the bench's engines.
const serviceName = "wf-bench"

// taskTypeName is the one task type a run enqueues and works.
const taskTypeName = "bench_task"

// env is what one run works in: a database of its own, the spec set with the
// bench's task type, and the loopback endpoint of the http runner.
type env struct {
	cfg      Config
	workDir  string // specs and instance working folder
	ownDir   bool   // workDir was created here: removed at the end
	cluster  *localpg.Cluster
	adminURL string // the server's maintenance database
	dbName   string
	dbURL    string
	pool     *pgxpool.Pool // the bench's own statements (monitoring, timings)
	store    *store.Store
	specPath string
	specs    *spec.Set
	http     *http.Server
	cleanups []func()
}

// setUp prepares the database, specs and endpoint of a run.
func setUp(ctx context.Context, cfg Config) (_ *env, err error) {
	e, err := setUpServer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.tearDown()
		}
	}()
	if err := e.createDatabase(ctx); err != nil {
		return nil, err
	}
	if err := e.writeSpecs(); err != nil {
		return nil, err
	}
	return e, nil
}

// setUpServer makes the bench folder and starts the server (a local cluster
// unless cfg names one), with no database yet.
func setUpServer(ctx context.Context, cfg Config) (_ *env, err error) {
	e := &env{cfg: cfg}
	defer func() {
		if err != nil {
			e.tearDown()
		}
	}()
	if e.workDir, err = os.MkdirTemp("", "wf-bench-"); err != nil {
		return nil, fmt.Errorf("error creating the bench folder: %w", err)
	}
	e.ownDir = true
	// The server may run as another user (when the bench runs as root).
	if err := os.Chmod(e.workDir, 0o755); err != nil {
		return nil, fmt.Errorf("error opening the bench folder: %w", err)
	}
	if err := e.startServer(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// startServer starts the local cluster, durable, unless a URL was given.
func (e *env) startServer(ctx context.Context) error {
	if e.cfg.DatabaseURL != "" {
		e.adminURL = e.cfg.DatabaseURL
		e.cluster = e.cfg.server // measured, not stopped: its starter stops it
		return nil
	}
	dir := e.cfg.DataDir
	if dir == "" {
		dir = filepath.Join(e.workDir, "pg")
	}
	// A folder given by --data-dir is removed at the end only if the bench
	// created it: a cluster already there is used, and kept.
	// (The cluster may live elsewhere when the server's user cannot reach dir.)
	placed, _, err := localpg.Place(dir, "")
	if err != nil {
		return err
	}
	_, statErr := os.Stat(placed)
	created := errors.Is(statErr, fs.ErrNotExist)
	settings := map[string]string{}
	if e.cfg.Statements || e.cfg.Mode == ModeIdle {
		settings["shared_preload_libraries"] = "pg_stat_statements"
		settings["pg_stat_statements.track_planning"] = "on"
	}
	// Extra settings for experiments ("name=value,name=value"), e.g.
	// session_preload_libraries=auto_explain. The durable ones cannot be
	// turned off here: the numbers must stay comparable.
	for _, kv := range strings.Split(os.Getenv("WF_BENCH_PG_SETTINGS"), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "fsync" || k == "synchronous_commit" || k == "full_page_writes" {
			continue
		}
		settings[k] = v
	}
	e.cfg.Logger.Info("starting a local PostgreSQL with durable settings", "dir", dir)
	c, err := localpg.Start(ctx, localpg.Config{DataDir: dir, Durable: true, Settings: settings})
	if err != nil {
		return err
	}
	e.cluster = c
	if c.Moved() {
		e.cfg.Logger.Info("the data folder is out of reach of PostgreSQL's user: the cluster lives elsewhere", "dir", c.DataDir(), "for", dir)
	}
	e.cleanups = append(e.cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			e.cfg.Logger.Warn("error stopping the local PostgreSQL", "err", err)
		}
		if e.cfg.DataDir != "" && created && !e.cfg.Keep {
			_ = os.RemoveAll(e.cfg.DataDir)
		}
		if c.Moved() && created && !e.cfg.Keep { // out of the server's reach, kept under /var/lib/wf
			_ = os.RemoveAll(c.DataDir())
		}
	})
	e.adminURL = c.URL("postgres")
	return nil
}

// createDatabase creates and migrates the run's own database.
func (e *env) createDatabase(ctx context.Context) error {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e.dbName = "wf_bench_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, e.adminURL)
	if err != nil {
		return fmt.Errorf("error connecting to PostgreSQL for the bench: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if err := store.New(admin).CreateDatabase(ctx, e.dbName); err != nil {
		return fmt.Errorf("%w (the bench needs a role that may create databases)", err)
	}
	e.cleanups = append(e.cleanups, func() {
		if e.cfg.Keep {
			e.cfg.Logger.Info("kept the bench database", "database", e.dbName)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, e.adminURL)
		if err != nil {
			e.cfg.Logger.Warn("error dropping the bench database", "database", e.dbName, "err", err)
			return
		}
		defer conn.Close(ctx)
		if err := store.New(conn).DropDatabase(ctx, e.dbName); err != nil {
			e.cfg.Logger.Warn("error dropping the bench database", "database", e.dbName, "err", err)
		}
	})
	if e.dbURL, err = withDatabase(e.adminURL, e.dbName); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		return fmt.Errorf("error connecting to the bench database: %w", err)
	}
	_, err = dbmigrate.Up(ctx, conn)
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	if e.pool, err = e.newPool(ctx, 4); err != nil {
		return err
	}
	e.store = store.New(e.pool)
	e.checkpoint(ctx, e.store)
	if e.cfg.Statements || e.cfg.Mode == ModeIdle {
		if err := e.store.EnableStatementStats(ctx); err != nil {
			if e.cfg.Statements {
				return fmt.Errorf("%w (a local cluster preloads it; a server named by URL must list it in shared_preload_libraries)", err)
			}
			e.cfg.Logger.Warn("pg_stat_statements is not available; idle queries are counted from commits", "err", err)
		}
	}
	return nil
}

// checkpoint forces a checkpoint before a measured run, so that each run
// starts with the same WAL behind it (a checkpoint that the runs before it
// set off would land inside this one, with a full-page image of every page
// it touches first: 10–30% more PostgreSQL CPU in the runs it hit). Without
// the privilege it only logs: the numbers are then noisier, not wrong.
func (e *env) checkpoint(ctx context.Context, st *store.Store) {
	if err := st.Checkpoint(ctx); err != nil {
		e.cfg.Logger.Warn("no checkpoint before the run; its numbers may include one set off by earlier runs", "err", err)
	}
}

// newPool opens a pool of at most maxConns connections on the bench database.
func (e *env) newPool(ctx context.Context, maxConns int) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(e.dbURL)
	if err != nil {
		return nil, fmt.Errorf("error reading the bench database URL: %w", err)
	}
	pc.MaxConns = int32(maxConns)
	pool, err := store.ConnectWithoutJIT(ctx, pc) // as wf run's pool (cli connectPool)
	if err != nil {
		return nil, fmt.Errorf("error connecting to the bench database: %w", err)
	}
	return pool, nil
}

// withDatabase returns a connection string naming another database, for
// both URL and key=value forms.
func withDatabase(conn, db string) (string, error) {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return "", fmt.Errorf("error reading the database URL: %w", err)
		}
		u.Path = "/" + db
		return u.String(), nil
	}
	return conn + " dbname=" + db, nil
}

// writeSpecs writes the bench's task type (for `wf run` instances) and
// compiles it (for the in-process engine and the client).
func (e *env) writeSpecs() error {
	var handler string
	switch e.cfg.Runner {
	case RunnerBuiltin:
		handler = "  builtin: noop"
	case RunnerExec:
		handler = "  exec:\n    command: [\"true\"]"
	case RunnerHTTP:
		addr, err := e.serveHTTP()
		if err != nil {
			return err
		}
		handler = "  http:\n    url: http://" + addr + "/task"
	}
	doc := "kind: TaskType\nname: " + taskTypeName + "\n" +
		"description: The task type of `wf bench` (" + e.cfg.Runner + ").\n" +
		"max_retries: 0\nhandler:\n" + handler + "\n"
	e.specPath = filepath.Join(e.workDir, "bench.yaml")
	if err := os.WriteFile(e.specPath, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("error writing the bench spec: %w", err)
	}
	set, err := spec.Load(spec.Options{Builtins: builtin.NewRegistry().Names()}, e.specPath)
	if err != nil {
		return fmt.Errorf("error compiling the bench spec: %w", err)
	}
	e.specs = set
	return nil
}

// serveHTTP starts the loopback endpoint the http runner posts to: it reads
// the task and answers 204 (success, no outputs).
func (e *env) serveHTTP() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("error listening for the bench endpoint: %w", err)
	}
	e.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = r.Body.Read(make([]byte, 512))
			w.WriteHeader(http.StatusNoContent)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = e.http.Serve(l) }()
	e.cleanups = append(e.cleanups, func() { _ = e.http.Close() })
	return l.Addr().String(), nil
}

// client returns an enqueueing client on pool.
func (e *env) client(pool *pgxpool.Pool) *client.Client {
	return client.New(store.New(pool), e.specs).WithTracerProvider(e.cfg.TracerProvider)
}

// tearDown closes, drops and removes what setUp made, last first.
func (e *env) tearDown() {
	if e.pool != nil {
		e.pool.Close()
	}
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	if e.ownDir && !e.cfg.Keep {
		_ = os.RemoveAll(e.workDir)
	}
}

// describe records the machine and the server settings in res.
func (e *env) describe(ctx context.Context, res *Result) error {
	res.Machine = describeMachine()
	v, err := e.store.ServerVersion(ctx)
	if err != nil {
		return err
	}
	res.Postgres.Version = v
	res.Postgres.Settings, err = e.store.ServerSettings(ctx, reportedSettings)
	if err != nil {
		return err
	}
	res.Postgres.Local = e.cluster != nil
	return nil
}

// reportedSettings are the server settings that decide commit cost and
// cache size; every result lists them.
var reportedSettings = []string{
	"fsync", "synchronous_commit", "full_page_writes", "wal_level", "wal_sync_method", "wal_buffers",
	"wal_writer_delay", "commit_delay", "max_wal_size", "checkpoint_timeout", "shared_buffers", "work_mem",
	"max_connections", "autovacuum", "shared_preload_libraries",
}

// postmasterPID returns the pid of the local cluster's server, or 0.
func (e *env) postmasterPID() int {
	if e.cluster == nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(e.cluster.DataDir(), "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}
