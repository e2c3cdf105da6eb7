package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbmigrate"
	"github.com/wfhq/wf/internal/localpg"
)

// localDatabase is the database wf uses in its local cluster.
const localDatabase = "wf"

// connectTimeout bounds one connection attempt when the URL sets none.
const connectTimeout = 10 * time.Second

// dbAccess says what a command needs of the database.
type dbAccess int

const (
	// accessSchema: the command reads and writes wf's tables. On wf's own
	// local database the migrations are applied first; a database given by
	// URL must be up to date already (wf migrate up).
	accessSchema dbAccess = iota
	// accessRead: the command only reads. It needs wf's tables as
	// accessSchema does, and never creates a local cluster to read from.
	accessRead
	// accessAny: the command deals with the schema itself (wf migrate,
	// wf run).
	accessAny
)

// openDatabase returns a pool on wf's database and a cleanup that closes it.
//
// With a database URL it connects there. Without one it uses the local
// PostgreSQL cluster in <data_dir>/pg: it reuses the cluster when another wf
// process already runs it, else starts it (creating it the first time, with
// durable settings, unless access is accessRead) and then the cleanup also
// stops it. Either way the database "wf" is created when
// missing. Then the schema is checked as access says (see checkSchema).
//
// Errors are one clear line: where wf tried to connect and what failed.
func openDatabase(ctx context.Context, cfg *config.Config, logger *slog.Logger, access dbAccess) (*pgxpool.Pool, func(), error) {
	var pool *pgxpool.Pool
	var cleanup func()
	var err error
	if cfg.DatabaseURL != "" {
		pooled := cfg.Database.SessionURL != ""
		if pooled {
			// Fail at start, not at the first election, when it is wrong.
			if _, err := connectSession(ctx, cfg.Database.SessionURL); err != nil {
				return nil, nil, err
			}
		}
		if pool, err = connectPool(ctx, cfg.DatabaseURL, pooled); err != nil {
			return nil, nil, err
		}
		cleanup = pool.Close
	} else if pool, cleanup, err = openLocalDatabase(ctx, cfg, logger, access); err != nil {
		return nil, nil, err
	}
	if err := checkSchema(ctx, cfg, pool, logger, access); err != nil {
		cleanup()
		return nil, nil, err
	}
	return pool, cleanup, nil
}

// configuredStore returns the store on pool that a command works through:
// its notifications go on the configured channels (storeChannels), where
// the wf run instances of this configuration listen.
func configuredStore(cfg *config.Config, pool *pgxpool.Pool) *store.Store {
	return store.New(pool).WithChannels(storeChannels(cfg))
}

// checkSchema makes sure a command that needs wf's tables finds them: on
// wf's own local database it applies the pending migrations; a database
// given by URL belongs to its operator, so a missing or older schema is an
// error that says to run wf migrate up. accessAny checks nothing.
func checkSchema(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool, logger *slog.Logger, access dbAccess) error {
	if access == accessAny {
		return nil
	}
	where := databaseWhere(pool)
	st, err := migrationStatus(ctx, pool)
	if err != nil {
		return fmt.Errorf("error reading the wf schema version of the database at %s: %w", where, err)
	}
	switch {
	case st.UpToDate():
		return nil
	case cfg.DatabaseURL == "":
		logger.Info("applying wf's migrations to the local database", "from", st.Current, "to", st.Latest)
		if _, err := migrateDatabase(ctx, cfg, pool); err != nil {
			return fmt.Errorf("error migrating the local database: %w", err)
		}
		return nil
	case st.Current == 0:
		return fmt.Errorf("the database at %s has no wf schema; run `wf migrate up`", where)
	}
	return fmt.Errorf("the database at %s is at wf schema version %d, this wf needs %d; run `wf migrate up`", where, st.Current, st.Latest)
}

// databaseWhere names a pool's database for messages: host:port/database,
// never the password.
func databaseWhere(pool *pgxpool.Pool) string {
	cc := pool.Config().ConnConfig
	where := cc.Host
	if !strings.HasPrefix(cc.Host, "/") {
		where = net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	}
	return where + "/" + cc.Database
}

// errNoLocalDatabase is what a read-only command says where no local
// cluster exists: it does not create one just to find it empty.
func errNoLocalDatabase(dataDir string) error {
	return fmt.Errorf("no local database exists yet in %s: start one with `wf run` (or `make run`) there, or point --database-url at a wf database", dataDir)
}

// openLocalDatabase is openDatabase without a URL: the cluster in
// <data_dir>/pg.
func openLocalDatabase(ctx context.Context, cfg *config.Config, logger *slog.Logger, access dbAccess) (*pgxpool.Pool, func(), error) {
	// As root, the cluster may live elsewhere (see localpg.Place).
	dir, moved, err := localpg.Place(filepath.Join(cfg.DataDir, "pg"), "")
	if err != nil {
		return nil, nil, err
	}
	if access == accessRead {
		if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
			return nil, nil, errNoLocalDatabase(cfg.DataDir)
		}
	}
	// The server may run as another user (when wf runs as root): it must be
	// able to reach its folder.
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("error creating data folder %s: %w", cfg.DataDir, err)
	}
	if adminURL, ok := runningLocalCluster(ctx, dir); ok {
		if pool, err := openLocalPool(ctx, adminURL); err == nil {
			logger.Debug("using the local PostgreSQL already running", "dir", dir)
			return pool, pool.Close, nil
		}
	}

	if moved {
		logger.Info("starting local PostgreSQL outside the data folder, which its user cannot reach", "dir", dir, "data_dir", cfg.DataDir)
	} else {
		logger.Info("starting local PostgreSQL", "dir", dir)
	}
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(cfg.DataDir, "pg"), Durable: true})
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		// Stop even when ctx is cancelled (the usual case on SIGTERM).
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := cluster.Stop(stopCtx); err != nil {
			logger.Warn("error stopping local PostgreSQL", "dir", dir, "error", err)
		}
	}
	pool, err := openLocalPool(ctx, cluster.URL("postgres"))
	if err != nil {
		stop()
		return nil, nil, err
	}
	logger.Debug("local PostgreSQL started", "dir", dir, "port", cluster.Port())
	return pool, func() { pool.Close(); stop() }, nil
}

// openLocalPool creates wf's database in a local cluster when missing (via
// the cluster's maintenance database at adminURL) and opens a pool on it.
func openLocalPool(ctx context.Context, adminURL string) (*pgxpool.Pool, error) {
	if err := ensureDatabase(ctx, adminURL, localDatabase); err != nil {
		return nil, err
	}
	pool, err := connectPool(ctx, localpg.WithDatabase(adminURL, localDatabase), false)
	if err != nil {
		return nil, err
	}
	// wf's own cluster has the catalog's extension from the start (when the
	// PostGIS package is installed; without it the queue runs and the
	// catalog says what to install).
	if err := store.EnsurePostGISOn(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// ensureDatabase creates database name when it does not exist. This is
// bootstrap of wf's own local cluster, not part of the data contract, so it
// lives here rather than in the store.
func ensureDatabase(ctx context.Context, adminURL, name string) error {
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return fmt.Errorf("error reading the local PostgreSQL URL: %w", err)
	}
	cfg.ConnectTimeout = connectTimeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return connectError(cfg.Host, cfg.Port, cfg.Database, cfg.User, cfg.Password, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("error looking up database %q in the local PostgreSQL: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: created by another process meanwhile
		return nil
	}
	if err != nil {
		return fmt.Errorf("error creating database %q in the local PostgreSQL: %w", name, err)
	}
	return nil
}

// runningLocalCluster reports whether a live server runs from dir and, if
// so, the URL of its maintenance database. It reads PostgreSQL's own
// postmaster.pid (pid on line 1, port on line 4) and the password localpg
// keeps next to it. localpg.Start would stop such a server before starting
// its own, which would cut off the wf process using it.
func runningLocalCluster(ctx context.Context, dir string) (string, bool) {
	pidFile, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return "", false
	}
	lines := strings.Split(string(pidFile), "\n")
	if len(lines) < 4 {
		return "", false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return "", false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return "", false // stale: localpg.Start cleans up
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil || port <= 0 {
		return "", false
	}
	password, err := os.ReadFile(filepath.Join(dir, "wf-password"))
	if err != nil {
		return "", false
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword("wf", strings.TrimSpace(string(password))),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/postgres",
		RawQuery: "sslmode=disable",
	}
	// The server may still be starting or stopping: only a live answer counts.
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(pingCtx, u.String())
	if err != nil {
		return "", false
	}
	_ = conn.Close(pingCtx)
	return u.String(), true
}

// connectPool opens a pool and checks that one connection succeeds, so a
// wrong URL fails here with a clear message rather than later.
//
// pooled says that the URL goes through a transaction-mode pooler
// (PgBouncer's pool_mode = transaction), where consecutive statements of one
// client may run on different server sessions. pgx's default caches a
// prepared statement per statement and session, which such a pooler breaks
// ("prepared statement … does not exist" or "… already exists"). The pool
// then caches only statement descriptions and sends every statement unnamed,
// in one round trip (QueryExecModeCacheDescribe): nothing outlives a
// statement on the server. Everything else wf runs through the pool is
// already pooler-safe: no session SET (only SET LOCAL and set_config(…,
// true) inside transactions), advisory locks only transaction-scoped, and
// the session-scoped work (the leader's lock and LISTEN, the migrations'
// lock) goes to database.session_url. A URL that sets
// default_query_exec_mode keeps it. Without session_url, the pool's
// connections ask for JIT off (store.ConnectWithoutJIT); a session-mode
// pooler that refuses the startup parameter gets it, and any the URL sets,
// by SET on each new connection, the pool's and those made from its
// settings (the leader's, presence's). With session_url, a refused startup
// parameter is an error that says to remove it from the URL.
func connectPool(ctx context.Context, databaseURL string, pooled bool) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// The parse error may quote the URL, password included: say only what is expected.
		return nil, errors.New("error reading the database URL: it is not a valid PostgreSQL connection string " +
			"(expected postgres://user:password@host:port/database)")
	}
	cc := pcfg.ConnConfig
	if err := supportedExecMode(cc.DefaultQueryExecMode); err != nil {
		return nil, err
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = connectTimeout
	}
	if pooled && !strings.Contains(databaseURL, "default_query_exec_mode") {
		cc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	var pool *pgxpool.Pool
	if pooled {
		pool, err = store.PingedPool(ctx, pcfg)
	} else {
		pool, err = store.ConnectWithoutJIT(ctx, pcfg)
	}
	if err != nil {
		werr := connectError(cc.Host, cc.Port, cc.Database, cc.User, cc.Password, err)
		if name, refused := store.RefusedStartupParameter(err); refused && pooled {
			// A SET after connecting would hold for one transaction's
			// server session, not for the pool's.
			return nil, fmt.Errorf("%w; a transaction-mode pooler takes no session settings: remove %s from the database URL "+
				"(for jit: ALTER ROLE <wf's role> SET jit = off on the server)", werr, name)
		}
		return nil, werr
	}
	return pool, nil
}

// supportedExecMode refuses the query exec modes in which pgx encodes
// parameters without the server's types (exec, simple_protocol): wf's
// statements send arrays of UUIDs, which pgx cannot encode that way, so every
// enqueue would fail. The error says so before anything runs.
func supportedExecMode(mode pgx.QueryExecMode) error {
	name := map[pgx.QueryExecMode]string{pgx.QueryExecModeExec: "exec", pgx.QueryExecModeSimpleProtocol: "simple_protocol"}[mode]
	if name == "" {
		return nil
	}
	return fmt.Errorf("error reading the database URL: default_query_exec_mode=%s is not supported "+
		"(wf's statements need the server's parameter types): use cache_statement (the default), cache_describe or describe_exec", name)
}

// connectError words a failed connection on one line: where, as whom, and
// the root cause, never the password.
func connectError(host string, port uint16, database, user, password string, err error) error {
	where := host
	if !strings.HasPrefix(host, "/") {
		where = net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	reason := connectReason(err)
	if password != "" {
		reason = strings.ReplaceAll(reason, password, config.Mask)
	}
	return fmt.Errorf("error connecting to PostgreSQL at %s (database %q, user %q): %s", where, database, user, reason)
}

// connectReason is the root cause of a connection failure, in a few words.
func connectReason(err error) string {
	var pgErr *pgconn.PgError
	var dnsErr *net.DNSError
	var errno syscall.Errno
	switch {
	case errors.As(err, &pgErr):
		return pgErr.Message
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.As(err, &dnsErr):
		return "cannot resolve host " + dnsErr.Name
	case errors.As(err, &errno):
		return errno.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		msg = msg[i+2:]
	}
	return strings.Join(strings.Fields(msg), " ")
}

// connectSession parses a session URL (database.session_url) and checks
// that it connects, returning its connection settings.
func connectSession(ctx context.Context, sessionURL string) (*pgx.ConnConfig, error) {
	conn, err := connectSetting(ctx, "database.session_url", sessionURL)
	if err != nil {
		return nil, err
	}
	_ = conn.Close(context.WithoutCancel(ctx))
	// The settings as parsed, not conn.Config(): a connected conn's
	// settings carry its notification handler, so a connection opened with
	// them would hand its notifications to this closed conn's buffer (the
	// leader's LISTEN would receive nothing).
	cc := conn.Config()
	cc.OnNotification = nil
	return cc, nil
}

// connectSetting opens one connection to url, the value of the setting
// name (such as catalog.database_url); its errors name the setting, never
// the URL, which may hold a password. A startup parameter that a
// session-mode pooler refuses (jit, options) is set after connecting
// instead, as for the pool (store.ConnectConfig).
func connectSetting(ctx context.Context, name, url string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("error reading %s: it is not a valid PostgreSQL connection string "+
			"(expected postgres://user:password@host:port/database)", name)
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = connectTimeout
	}
	conn, err := store.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, connectError(cc.Host, cc.Port, cc.Database, cc.User, cc.Password, err))
	}
	return conn, nil
}

// sessionConfig returns the settings of the connection that holds session
// state for a long time (the leader election's advisory lock and LISTEN):
// database.session_url when set, else the pool's own.
func sessionConfig(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool) (*pgx.ConnConfig, error) {
	if cfg.Database.SessionURL == "" {
		return pool.Config().ConnConfig, nil
	}
	return connectSession(ctx, cfg.Database.SessionURL)
}

// migrateDatabase applies every pending migration and returns where the
// queue's database stands. The migrator holds a session-scoped advisory
// lock, so it runs on a connection of database.session_url when set
// (through a transaction-mode pooler the unlock could reach another session,
// leaving the lock held), else on one connection of the pool. With
// catalog.database_url the queue's database gets the queue's sections of
// the migrations and the catalog's database the catalog's (migrateCatalog).
func migrateDatabase(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool) (dbmigrate.Status, error) {
	st, err := migrateQueue(ctx, cfg, pool)
	if err != nil {
		return st, err
	}
	if cfg.Catalog.DatabaseURL != "" {
		if _, _, err := migrateCatalog(ctx, cfg); err != nil {
			return st, err
		}
	}
	return st, nil
}

// migrateQueue applies the pending migrations to the queue's database: all
// of each one, or the queue's sections when the catalog is apart.
func migrateQueue(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool) (dbmigrate.Status, error) {
	part := queuePart(cfg)
	if cfg.Database.SessionURL != "" {
		cc, err := connectSession(ctx, cfg.Database.SessionURL)
		if err != nil {
			return dbmigrate.Status{}, err
		}
		conn, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			return dbmigrate.Status{}, fmt.Errorf("database.session_url: %w", connectError(cc.Host, cc.Port, cc.Database, cc.User, cc.Password, err))
		}
		defer conn.Close(context.WithoutCancel(ctx))
		return dbmigrate.UpPart(ctx, conn, part)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return dbmigrate.Status{}, fmt.Errorf("error acquiring a connection to migrate: %w", err)
	}
	defer conn.Release()
	return dbmigrate.UpPart(ctx, conn.Conn(), part)
}

// migrationStatus reports where the database stands against the embedded
// migrations, changing nothing.
func migrationStatus(ctx context.Context, pool *pgxpool.Pool) (dbmigrate.Status, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return dbmigrate.Status{}, fmt.Errorf("error acquiring a connection to read the migration status: %w", err)
	}
	defer conn.Release()
	return dbmigrate.CurrentStatus(ctx, conn.Conn())
}
