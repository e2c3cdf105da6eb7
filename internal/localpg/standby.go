package localpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StartStandby makes a streaming replica of the running cluster c in
// dataDir (an empty or missing folder) and starts it: pg_basebackup -R
// copies c's data over a replication connection and configures the copy to
// follow c (standby.signal and primary_conninfo), then a second postmaster
// serves it read-only (hot_standby) on a free port. The standby's URL is the
// primary's with its own port; Stop stops it. c's default configuration
// (wal_level replica, max_wal_senders, the replication line initdb writes in
// pg_hba.conf) is all a replication connection needs.
func (c *Cluster) StartStandby(ctx context.Context, dataDir string) (*Cluster, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("error resolving standby folder %q: %w", dataDir, err)
	}
	s := &Cluster{cfg: Config{DataDir: abs, Env: c.cfg.Env, Settings: map[string]string{"hot_standby": "on"}},
		origin: abs, binDir: c.binDir, runAs: c.runAs}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("error creating standby folder %s: %w", abs, err)
	}
	if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("error creating standby folder %s: %w", abs, err)
	}
	if err := s.chown(abs); err != nil {
		return nil, err
	}
	s.cfg.Env = append(append([]string{}, s.cfg.Env...), "PGPASSWORD="+c.password)
	out, err := s.run(ctx, "pg_basebackup", "-D", abs, "-h", "127.0.0.1", "-p", fmt.Sprint(c.port), "-U", superuser,
		"-R", "-X", "stream", "--no-sync", "--checkpoint=fast")
	if err != nil {
		return nil, fmt.Errorf("error copying the cluster for a standby with pg_basebackup: %w: %s", err, out)
	}
	s.cfg.Env = c.cfg.Env
	// The copy carries the primary's port file and log: the standby picks
	// its own port and writes its own log.
	for _, f := range []string{portFile, "wf-postgres.log", originFile} {
		_ = os.Remove(filepath.Join(abs, f))
	}
	if err := s.initIfNeeded(ctx); err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}
