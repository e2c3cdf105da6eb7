// Package localpg starts and stops a PostgreSQL cluster of wf's own from the
// server binaries found on the machine (initdb + pg_ctl), so a newcomer needs
// no server set up: `wf run` keeps one in a data folder across restarts, and
// tests start a throwaway one per test run.
//
// PostgreSQL refuses to run as root; when the process is root the cluster is
// created and run as the "postgres" user (or "nobody"), and the data folder is
// handed to that user. When that user cannot reach the data folder (a clone
// in /root or another folder of mode 0700), the cluster lives instead in a
// folder of its own under /var/lib/wf, named after the data folder's path
// (see Place).
package localpg

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Config says where the cluster lives and how it runs.
type Config struct {
	// DataDir holds the cluster; it is created by initdb when empty or missing.
	DataDir string
	// Port to listen on (127.0.0.1 only); 0 picks a free one. A cluster that
	// already exists reuses the port it was created with when this is 0.
	Port int
	// Durable keeps PostgreSQL's durable defaults (fsync, synchronous_commit).
	// Throwaway test clusters turn them off for speed.
	Durable bool
	// Settings are extra postgresql.conf lines (name → value).
	Settings map[string]string
	// BinDir overrides where initdb, pg_ctl and postgres are looked up.
	BinDir string
	// Env is extra environment (NAME=value) for the server's processes, e.g.
	// datefudge's for a test run on another date (see internal/dbtest).
	Env []string
	// FallbackRoot is where a cluster goes when the server's user cannot
	// reach DataDir (see Place); empty means DefaultFallbackRoot.
	FallbackRoot string
}

// DefaultFallbackRoot holds the clusters whose data folder the server's user
// cannot reach: one folder each, named after a hash of the data folder's
// absolute path, so two checkouts never share a cluster.
const DefaultFallbackRoot = "/var/lib/wf"

// originFile, in a relocated cluster's folder, names the data folder it
// stands in for, so a person looking under /var/lib/wf knows whose it is.
const originFile = "wf-origin"

// Cluster is a running local PostgreSQL.
type Cluster struct {
	cfg      Config
	origin   string // the data folder asked for (cfg.DataDir unless moved)
	moved    bool
	binDir   string
	runAs    *syscall.Credential
	port     int
	password string
}

const (
	superuser    = "wf"
	passwordFile = "wf-password"
	portFile     = "wf-port"
)

// ErrNoServer is returned when no PostgreSQL server binaries are on the machine.
var ErrNoServer = errors.New("no PostgreSQL server binaries found (initdb, pg_ctl): install the postgresql package (apt-get install postgresql) or set WF_DATABASE_URL")

// FindBinDir returns the folder holding initdb and pg_ctl: $PATH first, then
// /usr/lib/postgresql/<newest version>/bin.
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return versionOf(matches[i]) > versionOf(matches[j]) })
	for _, m := range matches {
		return filepath.Dir(m), nil
	}
	return "", ErrNoServer
}

func versionOf(initdbPath string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdbPath))))
	return v
}

// Start creates the cluster when DataDir holds none, then starts it and waits
// until it accepts connections.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("error starting local PostgreSQL: no data folder given")
	}
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("error resolving data folder %q: %w", cfg.DataDir, err)
	}
	cfg.DataDir = abs
	binDir := cfg.BinDir
	if binDir == "" {
		if binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{cfg: cfg, origin: abs, binDir: binDir}
	if os.Geteuid() == 0 {
		if c.runAs, err = unprivilegedUser(); err != nil {
			return nil, err
		}
	}
	if c.cfg.DataDir, c.moved, err = place(cfg.DataDir, cfg.FallbackRoot, c.runAs); err != nil {
		return nil, err
	}
	if err := c.initIfNeeded(ctx); err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// URL is the connection string of the cluster's given database.
func (c *Cluster) URL(database string) string {
	return loopbackURL(superuser, c.password, c.port, database)
}

// loopbackURL is the connection string of database on 127.0.0.1:port, as
// user with password, without TLS.
func loopbackURL(user, password string, port int, database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(user, password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// WithDatabase returns the connection URL rawURL naming database instead
// of its own; a URL that does not parse is returned as it is (connecting
// with it says what is wrong).
func WithDatabase(rawURL, database string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = "/" + database
	return u.String()
}

// Port is the TCP port the cluster listens on.
func (c *Cluster) Port() int { return c.port }

// DataDir is the cluster's data folder: Config.DataDir, or the folder it
// was moved to (see Moved).
func (c *Cluster) DataDir() string { return c.cfg.DataDir }

// Moved reports whether the cluster lives outside Config.DataDir, because
// the server's user cannot reach it (see Place). Whoever removes a
// throwaway cluster's folder removes DataDir too then.
func (c *Cluster) Moved() bool { return c.moved }

// Place returns the folder the cluster of dataDir lives in, and whether it
// was moved. It is dataDir itself, unless wf runs as root and the server's
// user (see Start) cannot enter some folder above dataDir: then it is
// <fallbackRoot>/pg-<hash of dataDir's absolute path> (fallbackRoot empty
// means DefaultFallbackRoot). Nothing is created.
func Place(dataDir, fallbackRoot string) (string, bool, error) {
	var runAs *syscall.Credential
	if os.Geteuid() == 0 {
		var err error
		if runAs, err = unprivilegedUser(); err != nil {
			return "", false, err
		}
	}
	return place(dataDir, fallbackRoot, runAs)
}

func place(dataDir, fallbackRoot string, runAs *syscall.Credential) (string, bool, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", false, fmt.Errorf("error resolving data folder %q: %w", dataDir, err)
	}
	if runAs == nil {
		return abs, false, nil
	}
	blocked, err := blockingFolder(abs, runAs)
	if err != nil || blocked == "" {
		return abs, false, err
	}
	sum := sha256.Sum256([]byte(abs))
	moved := filepath.Join(cmp.Or(fallbackRoot, DefaultFallbackRoot), "pg-"+hex.EncodeToString(sum[:8]))
	if blocked, err := blockingFolder(moved, runAs); err != nil || blocked != "" {
		if err == nil {
			err = fmt.Errorf("it runs as user id %d (wf runs as root), which cannot enter %s either", runAs.Uid, blocked)
		}
		return "", false, fmt.Errorf("error placing local PostgreSQL for %s: %w", abs, err)
	}
	return moved, true, nil
}

// Stop shuts the cluster down (fast mode: running sessions are ended) and
// waits until it is gone. Stopping a stopped cluster is not an error.
func (c *Cluster) Stop(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.cfg.DataDir, "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := c.run(ctx, "pg_ctl", "stop", "-D", c.cfg.DataDir, "-m", "fast", "-w", "-t", "60"); err != nil {
		return fmt.Errorf("error stopping local PostgreSQL in %s: %w: %s", c.cfg.DataDir, err, out)
	}
	return nil
}

func (c *Cluster) initIfNeeded(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.cfg.DataDir, "PG_VERSION")); err == nil {
		pw, err := os.ReadFile(filepath.Join(c.cfg.DataDir, passwordFile))
		if err != nil {
			return fmt.Errorf("error reading the password of the local PostgreSQL in %s: %w", c.cfg.DataDir, err)
		}
		c.password = strings.TrimSpace(string(pw))
		if c.cfg.Port == 0 {
			if b, err := os.ReadFile(filepath.Join(c.cfg.DataDir, portFile)); err == nil {
				c.cfg.Port, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
		}
		return nil
	}
	// Parents the server's user must pass through are created open; the
	// data folder itself is its own.
	if err := os.MkdirAll(filepath.Dir(c.cfg.DataDir), 0o755); err != nil {
		return fmt.Errorf("error creating data folder %s: %w", c.cfg.DataDir, err)
	}
	if err := os.Mkdir(c.cfg.DataDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("error creating data folder %s: %w", c.cfg.DataDir, err)
	}
	if err := c.chown(c.cfg.DataDir); err != nil {
		return err
	}
	if err := c.checkReachable(c.cfg.DataDir); err != nil {
		return err
	}
	c.password = randomHex(16)
	pwFile, err := os.CreateTemp("", "wf-pw-*")
	if err != nil {
		return fmt.Errorf("error creating password file: %w", err)
	}
	defer os.Remove(pwFile.Name())
	if _, err := pwFile.WriteString(c.password + "\n"); err != nil {
		return fmt.Errorf("error writing password file: %w", err)
	}
	pwFile.Close()
	if err := c.chown(pwFile.Name()); err != nil {
		return err
	}
	out, err := c.run(ctx, "initdb", "-D", c.cfg.DataDir, "-U", superuser, "--pwfile", pwFile.Name(),
		"--auth=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync")
	if err != nil {
		return fmt.Errorf("error creating local PostgreSQL cluster in %s with initdb: %w: %s", c.cfg.DataDir, err, out)
	}
	if err := os.WriteFile(filepath.Join(c.cfg.DataDir, passwordFile), []byte(c.password+"\n"), 0o600); err != nil {
		return fmt.Errorf("error saving the local PostgreSQL password: %w", err)
	}
	if c.moved {
		if err := os.WriteFile(filepath.Join(c.cfg.DataDir, originFile), []byte(c.origin+"\n"), 0o644); err != nil {
			return fmt.Errorf("error noting whose cluster %s is: %w", c.cfg.DataDir, err)
		}
	}
	return c.chown(filepath.Join(c.cfg.DataDir, passwordFile))
}

func (c *Cluster) start(ctx context.Context) error {
	// A cluster left running by a crashed process is stopped first, so its
	// settings and port are ours.
	if _, err := os.Stat(filepath.Join(c.cfg.DataDir, "postmaster.pid")); err == nil {
		_, _ = c.run(ctx, "pg_ctl", "stop", "-D", c.cfg.DataDir, "-m", "fast", "-w", "-t", "60")
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port := c.cfg.Port
		if port == 0 {
			var err error
			if port, err = freePort(); err != nil {
				return err
			}
		}
		opts := []string{
			"-c listen_addresses=127.0.0.1",
			"-c port=" + strconv.Itoa(port),
			"-c unix_socket_directories=''",
			"-c max_connections=300",
			"-c shared_buffers=128MB",
		}
		if !c.cfg.Durable {
			opts = append(opts, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
		}
		keys := make([]string, 0, len(c.cfg.Settings))
		for k := range c.cfg.Settings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			opts = append(opts, fmt.Sprintf("-c %s=%s", k, c.cfg.Settings[k]))
		}
		logFile := filepath.Join(c.cfg.DataDir, "wf-postgres.log")
		out, err := c.run(ctx, "pg_ctl", "start", "-D", c.cfg.DataDir, "-w", "-t", "60", "-l", logFile, "-o", strings.Join(opts, " "))
		if err == nil {
			c.port = port
			_ = os.WriteFile(filepath.Join(c.cfg.DataDir, portFile), []byte(strconv.Itoa(port)+"\n"), 0o600)
			// The server's user owns everything in its folder (pg_basebackup
			// of a standby reads every file).
			_ = c.chown(filepath.Join(c.cfg.DataDir, portFile))
			return nil
		}
		tail, _ := os.ReadFile(logFile)
		lastErr = fmt.Errorf("error starting local PostgreSQL in %s: %w: %s %s", c.cfg.DataDir, err, out, lastLines(tail, 5))
		if c.cfg.Port != 0 && !bytes.Contains(tail, []byte("could not bind")) {
			break
		}
		c.cfg.Port = 0 // the remembered port is taken: pick another
	}
	return lastErr
}

// run executes a server binary as the cluster's user and returns its combined output.
func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(append(os.Environ(), "LC_ALL=C"), c.cfg.Env...)
	if c.runAs != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.runAs}
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func (c *Cluster) chown(path string) error {
	if c.runAs == nil {
		return nil
	}
	if err := os.Chown(path, int(c.runAs.Uid), int(c.runAs.Gid)); err != nil {
		return fmt.Errorf("error handing %s to the PostgreSQL user: %w", path, err)
	}
	return nil
}

// checkReachable fails, with a message that says which folder and what to
// do, when the server's user (when wf runs as root and starts it as another
// user) cannot traverse every folder above dir: initdb would only say
// "Permission denied" about dir itself.
func (c *Cluster) checkReachable(dir string) error {
	if c.runAs == nil {
		return nil
	}
	blocked, err := blockingFolder(dir, c.runAs)
	if err != nil || blocked == "" {
		return err
	}
	fi, err := os.Stat(blocked)
	if err != nil {
		return fmt.Errorf("error checking folder %s: %w", blocked, err)
	}
	return fmt.Errorf("error starting local PostgreSQL in %s: it runs as user id %d (wf runs as root), which cannot enter %s (mode %04o): allow it (chmod o+x %s) or choose a data folder it can reach",
		dir, c.runAs.Uid, blocked, fi.Mode().Perm(), blocked)
}

// blockingFolder returns the nearest existing folder above dir that user
// cannot enter, or "" when none stops it. Folders not made yet are created
// open (mode 0755) by Start.
func blockingFolder(dir string, user *syscall.Credential) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("error resolving data folder %s: %w", dir, err)
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return "", fmt.Errorf("error checking folder %s: %w", p, err)
		default:
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && !canTraverse(fi.Mode(), st.Uid, st.Gid, user) {
				return p, nil
			}
		}
		if p == filepath.Dir(p) {
			return "", nil
		}
	}
}

// canTraverse reports whether user may enter a folder with mode, owner and
// group (supplementary groups aside).
func canTraverse(mode os.FileMode, uid, gid uint32, user *syscall.Credential) bool {
	switch {
	case uid == user.Uid:
		return mode&0o100 != 0
	case gid == user.Gid:
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}

// unprivilegedUser picks the account the server runs as when we are root.
func unprivilegedUser() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("error starting local PostgreSQL as root: no unprivileged user (postgres or nobody) to run it as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("error finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
