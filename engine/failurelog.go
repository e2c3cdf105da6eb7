package engine

import (
	"fmt"
	"log/slog"
	"time"
)

// failureLog spaces the warnings of a periodic pass that fails again and
// again, as every pass does while the database is down: the first failure
// of a series is logged at once, naming the database, then at most one
// every failureLogEvery with the count so far, and the recovery once.
// Wall time: it paces log lines.
type failureLog struct {
	name     string
	database string // host:port/database, for the messages
	log      *slog.Logger
	failures int
	since    time.Time
	last     time.Time
}

// newFailureLog returns the failureLog of the pass name.
func (e *Engine) newFailureLog(name string) *failureLog {
	cc := e.cfg.Pool.Config().ConnConfig
	return &failureLog{name: name, database: fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database), log: e.cfg.Logger}
}

// failed records a failure of the pass, logging it when due.
func (f *failureLog) failed(err error) {
	now := time.Now()
	if f.failures == 0 {
		f.since = now
	}
	f.failures++
	if f.failures == 1 || now.Sub(f.last) >= failureLogEvery {
		f.log.Warn(f.name+" failed; retrying (logged again at most every "+failureLogEvery.String()+" while it fails)",
			"error", err, "database", f.database, "failures", f.failures, "since", f.since)
		f.last = now
	}
}

// ok records a pass that succeeded, logging the end of a series of
// failures.
func (f *failureLog) ok() {
	if f.failures > 0 {
		f.log.Info(f.name+" works again", "database", f.database, "failures", f.failures, "after", time.Since(f.since).Round(time.Millisecond))
		f.failures = 0
	}
}
