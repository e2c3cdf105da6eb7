package store

import "context"

// Read replicas (database.read_url): the positions in the write-ahead log
// that tell how far a streaming standby is behind its primary.

// WALPosition returns the primary's current write-ahead log position (its
// LSN as a byte offset): everything committed so far lies before it.
func (s *Store) WALPosition(ctx context.Context) (uint64, error) {
	const q = `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`
	var lsn int64
	err := s.db.QueryRow(ctx, q).Scan(&lsn)
	return uint64(lsn), wrap("reading the write-ahead log position", err)
}

// ReplayPosition returns how far a standby has replayed its primary's
// write-ahead log (a byte offset, comparable with WALPosition) and whether
// the server is a standby at all (in recovery): a server that is not
// replays nothing and reports 0.
func (s *Store) ReplayPosition(ctx context.Context) (lsn uint64, standby bool, err error) {
	const q = `
SELECT pg_is_in_recovery(),
       coalesce(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0'), 0)::bigint`
	var n int64
	err = s.db.QueryRow(ctx, q).Scan(&standby, &n)
	return uint64(n), standby, wrap("reading the replay position", err)
}
