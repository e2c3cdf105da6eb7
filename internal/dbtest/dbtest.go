// Package dbtest gives every test its own migrated PostgreSQL database.
//
// It connects to WF_TEST_DATABASE_URL when set (a role that may create
// databases); otherwise it starts one throwaway local cluster (internal/localpg)
// for the test binary and stops it when the tests end. `make test` starts one
// cluster for the whole run and sets WF_TEST_DATABASE_URL, so packages share it.
//
// Databases are cloned from a migrated template (named after a hash of the
// migrations), so a new database costs one CREATE DATABASE, and tests run in
// parallel without seeing each other's rows.
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbmigrate"
	"github.com/wfhq/wf/internal/localpg"
	"github.com/wfhq/wf/migrations"
)

// EnvURL names the variable that points tests at an existing server.
const EnvURL = "WF_TEST_DATABASE_URL"

// server is the process-wide test server: one per test binary, started lazily.
var server struct {
	once     sync.Once
	baseURL  string
	stop     func(context.Context) error
	template string
	err      error
}

// standalone are the databases Standalone created, dropped by Main.
var standalone struct {
	mu    sync.Mutex
	names []string
}

// Main runs the tests of a package, drops the databases Standalone created
// and stops the throwaway cluster, if one was started. Call it from
// TestMain: os.Exit(dbtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	dropStandalone()
	if server.stop != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = server.stop(ctx)
	}
	return code
}

// StartThrowaway starts a throwaway cluster in a new temporary folder. The
// caller calls stop, which stops the cluster and removes its folders.
func StartThrowaway(ctx context.Context) (c *localpg.Cluster, stop func(context.Context) error, err error) {
	dir, err := os.MkdirTemp("", "wf-pg-")
	if err != nil {
		return nil, nil, fmt.Errorf("error creating a folder for the test cluster: %w", err)
	}
	// The server may run as another user (when we are root): let it in.
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("error opening the test cluster folder: %w", err)
	}
	if err := clock.CheckEnv(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	env, err := FakeTimeEnv(clock.Offset())
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	c, err = localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(dir, "data"), Env: env})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	stop = func(ctx context.Context) error {
		err := c.Stop(ctx)
		_ = os.RemoveAll(dir)
		if c.Moved() { // the temporary folder was out of the server's reach
			_ = os.RemoveAll(c.DataDir())
		}
		return err
	}
	return c, stop, nil
}

// fakeTimeLibs are where Debian's datefudge package puts its library.
const fakeTimeLibs = "/usr/lib/*/datefudge/datefudge.so"

// FakeTimeEnv returns the environment that runs a test server d away from
// the real wall clock (clock.Offset for WF_TEST_NOW): datefudge moves the
// wall clock PostgreSQL reads (time, gettimeofday, clock_gettime of
// CLOCK_REALTIME), now() included, by the offset Go's clock.Now adds, and
// time keeps running. d is whole seconds; for 0 it is empty.
//
// Not libfaketime: it wraps the blocking calls (epoll_wait, poll, select)
// and reports the real time to whatever reads the clock while one of them
// blocks, so PostgreSQL's SIGALRM handler, which fires during a lock wait
// or pg_sleep, compared a real "now" with deadlines set in the moved time:
// lock_timeout, statement_timeout and deadlock_timeout fired the offset
// later (never, months ahead) or at once (behind). datefudge wraps only the
// clock reads, so a signal handler sees the moved time too.
func FakeTimeEnv(d time.Duration) ([]string, error) {
	if d == 0 {
		return nil, nil
	}
	at := time.Now().Add(d).Format(time.RFC3339)
	if d%time.Second != 0 {
		return nil, fmt.Errorf("error running PostgreSQL as if it were %s: the offset %s is not whole seconds", at, d)
	}
	if _, set := os.LookupEnv("DATEFUDGE_DOSTATIC"); set {
		// datefudge would stop the server's clock (whatever the value).
		return nil, fmt.Errorf("error running PostgreSQL as if it were %s: DATEFUDGE_DOSTATIC is set, which stops its clock: unset it", at)
	}
	libs, _ := filepath.Glob(fakeTimeLibs)
	if len(libs) == 0 {
		return nil, fmt.Errorf("error running PostgreSQL as if it were %s: datefudge is missing: run `make datefudge` (apt-get install datefudge) or `make test`, which installs it", at)
	}
	return []string{
		"LD_PRELOAD=" + libs[0],
		// datefudge subtracts DATEFUDGE seconds from the real clock.
		fmt.Sprintf("DATEFUDGE=%d", -int64(d/time.Second)),
	}, nil
}

// CheckServerClock returns an error when the run is meant to be on another
// date (WF_TEST_NOW) but uses a server of its own (WF_TEST_DATABASE_URL),
// whose now() is today's: only a server withdb or dbtest started is moved
// (withdb then sets WF_TEST_NOW_OFFSET beside the URL).
func CheckServerClock() error {
	if os.Getenv(EnvURL) == "" || os.Getenv(clock.EnvTestNow) == "" || os.Getenv(clock.EnvTestOffset) != "" {
		return nil
	}
	return fmt.Errorf("error running as if it were %s: %s points at a server whose clock is not moved; unset it so a throwaway server runs at that date", os.Getenv(clock.EnvTestNow), EnvURL)
}

func setup(ctx context.Context) {
	if server.err = CheckServerClock(); server.err != nil {
		return
	}
	server.baseURL = os.Getenv(EnvURL)
	if server.baseURL == "" {
		c, stop, err := StartThrowaway(ctx)
		if err != nil {
			server.err = err
			return
		}
		server.stop = stop
		server.baseURL = c.URL("postgres")
	}
	if server.err = checkClocksAgree(ctx, server.baseURL); server.err != nil {
		return
	}
	server.template, server.err = EnsureTemplate(ctx, server.baseURL)
}

// clockSkewLimit is how far the test server's now() and clock.Now may be
// apart in a run on another date before the run is refused: they are moved
// by the same whole seconds, so only the time a query takes separates them.
const clockSkewLimit = 5 * time.Second

// checkClocksAgree returns an error when the run is on another date
// (WF_TEST_NOW) and the server at baseURL is not on the same clock as Go
// (datefudge not in effect, or another offset): SQL's now() and the Go
// side would then disagree and tests fail for no fault of the code.
func checkClocksAgree(ctx context.Context, baseURL string) error {
	if clock.Offset() == 0 {
		return nil
	}
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		return fmt.Errorf("error connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	before := clock.Now()
	var dbNow time.Time
	if err := conn.QueryRow(ctx, "SELECT now()").Scan(&dbNow); err != nil {
		return fmt.Errorf("error reading the test server's clock: %w", err)
	}
	after := clock.Now()
	if dbNow.Before(before.Add(-clockSkewLimit)) || dbNow.After(after.Add(clockSkewLimit)) {
		return fmt.Errorf("error running as if it were %s: the test server's now() is %s, the Go clock %s (%s=%s): they must be moved alike",
			before.Format(time.RFC3339), dbNow.Format(time.RFC3339), before.Format(time.RFC3339), clock.EnvTestOffset, os.Getenv(clock.EnvTestOffset))
	}
	return nil
}

// migrationsHash names the template after the migrations it holds, so a
// changed migration gets a fresh template on a long-lived server.
func migrationsHash() string {
	h := sha256.New()
	h.Write([]byte("postgis")) // templates made since the catalog creates PostGIS in them
	_ = fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(migrations.FS, path)
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// EnsureTemplate creates the migrated template databases are cloned from
// on the server at baseURL, unless it exists, and returns its name.
func EnsureTemplate(ctx context.Context, baseURL string) (string, error) {
	name := "wf_tmpl_" + migrationsHash()
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		return "", fmt.Errorf("error connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	// Serialise template creation across test binaries sharing the server.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('wf:dbtest:template'))"); err != nil {
		return "", fmt.Errorf("error locking the test template: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext('wf:dbtest:template'))") //nolint:errcheck
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("error looking up the test template: %w", err)
	}
	if exists {
		return name, nil
	}
	building := name + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("error dropping a half-built template: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", fmt.Errorf("error creating the test template: %w", err)
	}
	tconn, err := pgx.Connect(ctx, localpg.WithDatabase(baseURL, building))
	if err != nil {
		return "", fmt.Errorf("error connecting to the test template: %w", err)
	}
	_, err = dbmigrate.Up(ctx, tconn)
	if err == nil {
		// The catalog's extension, made once here rather than in every
		// test database (a server without PostGIS skips it: the queue's
		// tests run anyway, the catalog's say what to install).
		err = store.EnsurePostGISOn(ctx, tconn)
	}
	tconn.Close(ctx)
	if err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", fmt.Errorf("error naming the test template: %w", err)
	}
	return name, nil
}

// BaseURL returns the URL of the test server's maintenance database, starting
// the server if needed.
func BaseURL(t testing.TB) string {
	t.Helper()
	if err := start(); err != nil {
		t.Fatalf("test database unavailable: %v", err)
	}
	return server.baseURL
}

// start starts the test server once per process and returns why it could
// not, if it could not.
func start() error {
	server.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		setup(ctx)
	})
	return server.err
}

// NewDatabase creates a fresh, migrated database for this test, drops it when
// the test ends, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := BaseURL(t)
	return createDatabase(t, base, "wf_test_"+randomSuffix(), server.template)
}

// Standalone creates a fresh, migrated database for code that has no
// *testing.T (a runnable example) and returns its URL; Main drops it.
func Standalone() (string, error) {
	if err := start(); err != nil {
		return "", fmt.Errorf("test database unavailable: %w", err)
	}
	name := "wf_example_" + randomSuffix()
	if err := create(server.baseURL, name, server.template); err != nil {
		return "", err
	}
	standalone.mu.Lock()
	standalone.names = append(standalone.names, name)
	standalone.mu.Unlock()
	return localpg.WithDatabase(server.baseURL, name), nil
}

// dropStandalone drops the databases Standalone created.
func dropStandalone() {
	standalone.mu.Lock()
	defer standalone.mu.Unlock()
	if len(standalone.names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, server.baseURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	for _, name := range standalone.names {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	standalone.names = nil
}

// NewEmptyDatabase creates a database with no wf schema (for migration tests).
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	base := BaseURL(t)
	return createDatabase(t, base, "wf_empty_"+randomSuffix(), "")
}

// createDatabase creates name (cloned from template when given), drops it
// when the test ends, and returns its URL.
func createDatabase(t testing.TB, base, name, template string) string {
	t.Helper()
	if err := create(base, name, template); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("error dropping test database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("error dropping test database %s: %v", name, err)
		}
	})
	return localpg.WithDatabase(base, name)
}

// create creates database name on the server at base, cloned from
// template when given.
func create(base, name, template string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("error connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	stmt := "CREATE DATABASE " + name
	if template != "" {
		stmt += " TEMPLATE " + template
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("error creating test database %s: %w", name, err)
	}
	return nil
}

// NewPool returns a connection pool on a fresh migrated database, closed when
// the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return PoolFor(t, NewDatabase(t))
}

// NewStore returns a store on a fresh, migrated database of the test's own
// (NewPool): the fixture most tests start from. Its DB runs any other SQL
// the test needs.
func NewStore(t testing.TB) *store.Store {
	t.Helper()
	return store.New(NewPool(t))
}

// PoolFor opens a pool on url, closed when the test ends.
func PoolFor(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	return PoolWith(t, url, nil)
}

// PoolWith is PoolFor with the pool's configuration changed by configure
// first, when given: a tracer, a dialer, the pool's size.
func PoolWith(t testing.TB, url string, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("error parsing the database URL: %v", err)
	}
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("error opening pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// PgBouncer starts a PgBouncer in transaction mode in front of the database
// at url (2 server connections, so clients share them) and returns the URL
// of the same database through it; it is stopped when the test ends. The
// pgbouncer binary must be installed (make test installs it).
func PgBouncer(t testing.TB, url string) string {
	t.Helper()
	return PgBouncerMode(t, url, "transaction")
}

// PgBouncerMode is PgBouncer with the pool mode given: session, transaction
// or statement.
func PgBouncerMode(t testing.TB, url, mode string) string {
	t.Helper()
	return PgBouncerSized(t, url, mode, 0)
}

// PgBouncerSized is PgBouncerMode with size server connections per database
// and user (0: PgBouncer's default of 2), for clients that hold more
// sessions at once than that (in session mode a client keeps its server
// connection).
func PgBouncerSized(t testing.TB, url, mode string, size int) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("error reading the database URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := localpg.StartPgBouncer(ctx, localpg.PgBouncerConfig{TargetURL: url, PoolMode: mode, PoolSize: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b.URL(cfg.Database)
}

// NewSplitDatabases creates two fresh databases for a test of a catalog in
// a database of its own (catalog.database_url): one migrated with the
// queue's sections of the migrations only (schema tasks), one with the
// catalog's only (schema catalog, and PostGIS when the server has it). Both
// are dropped when the test ends.
func NewSplitDatabases(t testing.TB) (queueURL, catalogURL string) {
	t.Helper()
	base := BaseURL(t)
	suffix := randomSuffix()
	queueURL = createDatabase(t, base, "wf_queue_"+suffix, "")
	catalogURL = createDatabase(t, base, "wf_catalog_"+suffix, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, db := range []struct {
		url  string
		part dbmigrate.Part
	}{{queueURL, dbmigrate.PartQueue}, {catalogURL, dbmigrate.PartCatalog}} {
		conn, err := pgx.Connect(ctx, db.url)
		if err != nil {
			t.Fatalf("error connecting to the test database: %v", err)
		}
		_, err = dbmigrate.UpPart(ctx, conn, db.part)
		if err == nil && db.part == dbmigrate.PartCatalog {
			err = store.EnsurePostGISOn(ctx, conn)
		}
		conn.Close(ctx)
		if err != nil {
			t.Fatalf("error migrating the %s test database: %v", db.part, err)
		}
	}
	return queueURL, catalogURL
}

// Replica starts, for one test, a PostgreSQL server of its own with a
// migrated database "wf", and a real streaming replica of it
// (localpg.Cluster.StartStandby: pg_basebackup -R and a second postmaster
// on another port), and returns the database's URL on each. Both are
// stopped, and their folders removed, when the test ends. It needs the
// server binaries (make test installs them) whatever WF_TEST_DATABASE_URL
// says: a replica is made of a server this process runs.
func Replica(t testing.TB) (primaryURL, replicaURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	primary, stop, err := StartThrowaway(ctx)
	if err != nil {
		t.Fatalf("error starting a primary for a replica: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = stop(ctx)
	})
	if err := create(primary.URL("postgres"), "wf", ""); err != nil {
		t.Fatal(err)
	}
	primaryURL = primary.URL("wf")
	conn, err := pgx.Connect(ctx, primaryURL)
	if err != nil {
		t.Fatalf("error connecting to the primary: %v", err)
	}
	_, err = dbmigrate.Up(ctx, conn)
	conn.Close(ctx)
	if err != nil {
		t.Fatalf("error migrating the primary: %v", err)
	}
	dir, err := os.MkdirTemp("", "wf-standby-")
	if err != nil {
		t.Fatalf("error creating a folder for the standby: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // the server's user may be another
		t.Fatal(err)
	}
	standby, err := primary.StartStandby(ctx, filepath.Join(dir, "data"))
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = standby.Stop(ctx)
		_ = os.RemoveAll(dir)
		if standby.Moved() {
			_ = os.RemoveAll(standby.DataDir())
		}
	})
	return primaryURL, standby.URL("wf")
}
