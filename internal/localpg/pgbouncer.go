package localpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncerConfig configures a PgBouncer in front of a PostgreSQL server.
type PgBouncerConfig struct {
	// TargetURL is the server (and credentials) PgBouncer connects to; any
	// database name a client asks for is forwarded to it.
	TargetURL string
	// PoolMode is session, transaction or statement. Default transaction.
	PoolMode string
	// PoolSize is the server connections per database and user. Default 2:
	// small, so that clients share server connections and whatever breaks
	// under the pool mode breaks at once.
	PoolSize int
	// Dir holds the configuration and the log; default a new temporary
	// folder, removed by Stop.
	Dir string
}

// PgBouncer is a running PgBouncer on a free port of 127.0.0.1.
type PgBouncer struct {
	cmd     *exec.Cmd
	port    int
	target  *pgx.ConnConfig
	dir     string
	tempDir bool
	done    chan struct{}
	stop    sync.Once
}

// FindPgBouncer returns the path of the pgbouncer binary: on PATH or in
// /usr/sbin (Debian's package).
func FindPgBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer", "/usr/local/bin/pgbouncer"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("error finding pgbouncer: not installed; run 'apt-get install pgbouncer' (make test installs it)")
}

// StartPgBouncer starts PgBouncer in front of cfg.TargetURL, as the
// unprivileged user PostgreSQL runs as when we are root (PgBouncer refuses
// root), and returns once it accepts connections.
func StartPgBouncer(ctx context.Context, cfg PgBouncerConfig) (*PgBouncer, error) {
	bin, err := FindPgBouncer()
	if err != nil {
		return nil, err
	}
	target, err := pgx.ParseConfig(cfg.TargetURL)
	if err != nil {
		return nil, fmt.Errorf("error reading PgBouncer's target URL: %w", err)
	}
	if cfg.PoolMode == "" {
		cfg.PoolMode = "transaction"
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 2
	}
	b := &PgBouncer{target: target, dir: cfg.Dir, done: make(chan struct{})}
	if b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "wf-pgbouncer-"); err != nil {
			return nil, fmt.Errorf("error creating a folder for PgBouncer: %w", err)
		}
		b.tempDir = true
	}
	var runAs *syscall.Credential
	if os.Geteuid() == 0 {
		if runAs, err = unprivilegedUser(); err != nil {
			return nil, err
		}
	}
	if b.port, err = freePort(); err != nil {
		return nil, err
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d user=%s password=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
default_pool_size = %d
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
server_reset_query = %s
logfile = %s
`, target.Host, target.Port, quote(target.User), quote(target.Password),
		b.port, filepath.Join(b.dir, "users.txt"), cfg.PoolMode, cfg.PoolSize, resetQuery(cfg.PoolMode), filepath.Join(b.dir, "pgbouncer.log"))
	users := fmt.Sprintf("%q %q\n", target.User, target.Password)
	files := map[string]string{"pgbouncer.ini": ini, "users.txt": users, "pgbouncer.log": ""}
	for name, body := range files {
		p := filepath.Join(b.dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("error writing %s: %w", p, err)
		}
		if runAs != nil {
			if err := os.Chown(p, int(runAs.Uid), int(runAs.Gid)); err != nil {
				return nil, fmt.Errorf("error handing %s to PgBouncer's user: %w", p, err)
			}
		}
	}
	if err := os.Chmod(b.dir, 0o755); err != nil {
		return nil, fmt.Errorf("error opening PgBouncer's folder: %w", err)
	}

	out, err := os.Create(filepath.Join(b.dir, "output.log"))
	if err != nil {
		return nil, fmt.Errorf("error creating PgBouncer's output file: %w", err)
	}
	defer out.Close() // the child holds its own descriptor
	b.cmd = exec.Command(bin, filepath.Join(b.dir, "pgbouncer.ini"))
	b.cmd.Stdout, b.cmd.Stderr = out, out
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if runAs != nil {
		b.cmd.SysProcAttr.Credential = runAs
	}
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("error starting pgbouncer: %w", err)
	}
	go func() { _ = b.cmd.Wait(); close(b.done) }()

	// Ready when it accepts a connection and answers through to the server.
	deadline := time.Now().Add(30 * time.Second)
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.Connect(pingCtx, b.URL(target.Database))
		if err == nil {
			_, err = conn.Exec(pingCtx, "SELECT 1", pgx.QueryExecModeSimpleProtocol)
			_ = conn.Close(pingCtx)
		}
		cancel()
		if err == nil {
			return b, nil
		}
		select {
		case <-b.done:
			return nil, fmt.Errorf("error starting pgbouncer: it exited: %s", b.logTail())
		case <-ctx.Done():
			b.Stop()
			return nil, fmt.Errorf("error starting pgbouncer: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Stop()
			return nil, fmt.Errorf("error starting pgbouncer: not ready after 30s (%v): %s", err, b.logTail())
		}
	}
}

// URL is a connection string to database through PgBouncer, as the target's
// user.
func (b *PgBouncer) URL(database string) string {
	return loopbackURL(b.target.User, b.target.Password, b.port, database)
}

// Port is the port PgBouncer listens on.
func (b *PgBouncer) Port() int { return b.port }

// Stop stops PgBouncer (SIGINT: at once, closing every connection), waits
// for it and removes its temporary folder. It is safe to call twice.
func (b *PgBouncer) Stop() {
	b.stop.Do(func() {
		_ = b.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.done
		}
		if b.tempDir {
			_ = os.RemoveAll(b.dir)
		}
	})
}

// logTail is the end of PgBouncer's output and log file, for errors.
func (b *PgBouncer) logTail() string {
	out, _ := os.ReadFile(filepath.Join(b.dir, "output.log"))
	file, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	return lastLines(append(out, file...), 10)
}

// resetQuery is server_reset_query for a pool mode: PgBouncer's default
// (DISCARD ALL, run when a client leaves its server session) in session
// mode, none in the others, where sessions are shared by design and a reset
// would only hide what the pooling breaks.
func resetQuery(mode string) string {
	if mode == "session" {
		return "DISCARD ALL"
	}
	return ""
}
