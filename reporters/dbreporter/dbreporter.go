// Package dbreporter is the "database" reporter: it counts a task's records
// by outcome and writes the counts into the task's progress, in batches,
// never once per record. It also keeps the first records of each outcome
// (KeepRecords of SUCCESS, of REJECTED and of FAILED) as their envelopes, in
// the task's row, so a run's refusals can be read without a detailed report
// (GET /tasks/{id}/records, the dashboard's task page).
//
// Writes happen on a background goroutine, started by the first Report:
// every BatchSize records or every Interval, whichever comes first, and once
// more, synchronously, at Finish. Each write carries the cumulative counts,
// so a lost or failed write is repaired by the next one. Report itself only
// takes a mutex and bumps counters. A run that reports no record writes
// nothing and adds nothing to the outputs (most task types report none, and
// the default reporter list is [database]).
//
// The reporter writes through ProgressWriter, which *store.Store satisfies;
// it never imports the engine.
package dbreporter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/reporters"
)

// ProgressWriter stores a task's progress and kept records. SetProgress
// merges the JSON object progress into the task's progress (its keys
// replace the stored ones); SetReportRecords replaces the task's kept
// records with records, a JSON array of {"n", "status", "envelope",
// "truncated"} ordered by n. engine/store's *Store implements it.
type ProgressWriter interface {
	SetProgress(ctx context.Context, taskID uuid.UUID, progress json.RawMessage) error
	SetReportRecords(ctx context.Context, taskID uuid.UUID, records json.RawMessage) error
}

// Defaults, filled in by Config.withDefaults.
const (
	// DefaultBatchSize is how many records trigger a write.
	DefaultBatchSize = 1000
	// DefaultInterval is how long counts may wait before they are written.
	DefaultInterval = 500 * time.Millisecond
	// DefaultWriteTimeout bounds one background write.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultKeepRecords is how many records of each outcome are kept.
	DefaultKeepRecords = 100
	// MaxKeptEnvelope is the most bytes a kept envelope takes: a larger one
	// is kept without its geometry, then without its properties and stats
	// (and marked truncated), so the kept records stay a few megabytes at
	// most whatever the records hold.
	MaxKeptEnvelope = 16 << 10
)

// Config configures the database reporter. The zero value is ready to use.
type Config struct {
	// BatchSize is how many records since the last write trigger the next
	// one. Zero means DefaultBatchSize.
	BatchSize int
	// Interval is the longest time new counts wait before they are written.
	// Zero means DefaultInterval.
	Interval time.Duration
	// WriteTimeout bounds each background write (Finish's write is bounded
	// by Finish's context). Zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// KeepRecords is how many records of each outcome (SUCCESS, REJECTED,
	// FAILED) are kept as envelopes: the first of the run. Zero means
	// DefaultKeepRecords; a negative number keeps none.
	KeepRecords int
	// Now is the clock of the progress' updated_at; nil means time.Now.
	Now func() time.Time
	// Logger receives a warning when a background write fails (the next
	// write repairs it); nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults returns cfg with every unset field given its default; it is
// the one place where the reporter's defaults live.
func (cfg Config) withDefaults() Config {
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.WriteTimeout = cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout)
	cfg.KeepRecords = cmp.Or(cfg.KeepRecords, DefaultKeepRecords)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return cfg
}

// validate reports every problem with a defaulted configuration at once.
func (cfg Config) validate() error {
	var errs []error
	if cfg.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("batch size is %d, want more than zero", cfg.BatchSize))
	}
	if cfg.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval is %s, want more than zero", cfg.Interval))
	}
	if cfg.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("write timeout is %s, want more than zero", cfg.WriteTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid database reporter configuration: %w", err)
	}
	return nil
}

// Counts are a task's records by outcome. They are the "records" member of
// the outputs and, with updated_at, the task's progress.
type Counts struct {
	Total     int64 `json:"total"`
	Succeeded int64 `json:"succeeded"`
	Rejected  int64 `json:"rejected"`
	Failed    int64 `json:"failed"`
}

// progress is the JSON object merged into the task's progress.
type progress struct {
	Counts
	UpdatedAt time.Time `json:"updated_at"`
}

// Builder makes a database reporter for each task run; it implements
// reporters.Builder.
type Builder struct {
	w   ProgressWriter
	cfg Config
}

// NewBuilder validates cfg once and returns a builder of reporters that
// write through w.
func NewBuilder(w ProgressWriter, cfg Config) (*Builder, error) {
	if w == nil {
		return nil, errors.New("invalid database reporter configuration: the progress writer is nil")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Builder{w: w, cfg: cfg}, nil
}

// NewReporter implements reporters.Builder.
func (b *Builder) NewReporter(task reporters.TaskInfo) (reporters.Reporter, error) {
	return newReporter(b.w, task.ID, b.cfg), nil
}

// Reporter counts the records of one task run and writes them into its
// progress. It is safe for concurrent use.
type Reporter struct {
	w      ProgressWriter
	taskID uuid.UUID
	cfg    Config

	mu        sync.Mutex
	counts    Counts
	snapTotal int64  // counts.Total when the last write was started
	written   Counts // the counts of the last successful write
	// kept holds the kept records' JSON entries, by record number; keptOf
	// counts them by outcome; keptWritten is how many the last successful
	// write stored (entries are only ever appended).
	kept        []json.RawMessage
	keptOf      map[reporters.RecordStatus]int
	keptWritten int
	started     bool // the background goroutine runs
	finishing   bool // Finish was called: no more records

	kick       chan struct{} // BatchSize records since the last snapshot
	stopLoop   context.CancelFunc
	loopDone   chan struct{}
	finishMu   sync.Mutex // serialises Finish calls
	result     map[string]any
	resultDone bool
}

// New returns a reporter for task taskID that writes through w.
func New(w ProgressWriter, taskID uuid.UUID, cfg Config) (*Reporter, error) {
	b, err := NewBuilder(w, cfg)
	if err != nil {
		return nil, err
	}
	return newReporter(b.w, taskID, b.cfg), nil
}

// newReporter builds a reporter from a defaulted, valid configuration.
func newReporter(w ProgressWriter, taskID uuid.UUID, cfg Config) *Reporter {
	return &Reporter{w: w, taskID: taskID, cfg: cfg, kick: make(chan struct{}, 1), loopDone: make(chan struct{}),
		keptOf: map[reporters.RecordStatus]int{}}
}

// Report counts one envelope. It never writes: it wakes the background
// writer when BatchSize records have arrived since its last write.
func (r *Reporter) Report(_ context.Context, env reporters.Envelope) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finishing {
		return fmt.Errorf("error reporting a record of task %s: %w", r.taskID, reporters.ErrFinished)
	}
	switch env.Status {
	case reporters.RecordSuccess:
		r.counts.Succeeded++
	case reporters.RecordRejected:
		r.counts.Rejected++
	case reporters.RecordFailed:
		r.counts.Failed++
	default:
		return fmt.Errorf("error reporting a record of task %s: status %q, want SUCCESS, REJECTED or FAILED", r.taskID, env.Status)
	}
	r.counts.Total++
	if r.keptOf[env.Status] < r.cfg.KeepRecords {
		entry, err := keptEntry(r.counts.Total, env)
		if err != nil {
			return fmt.Errorf("error reporting a record of task %s: %w", r.taskID, err)
		}
		r.kept = append(r.kept, entry)
		r.keptOf[env.Status]++
	}
	if !r.started {
		r.started = true
		ctx, cancel := context.WithCancel(context.Background())
		r.stopLoop = cancel
		go r.loop(ctx)
	}
	if r.counts.Total-r.snapTotal == int64(r.cfg.BatchSize) {
		select {
		case r.kick <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	return nil
}

// loop writes the counts when a batch is full or the interval has passed
// with unwritten counts, until ctx is cancelled by Finish.
func (r *Reporter) loop(ctx context.Context) {
	defer close(r.loopDone)
	timer := time.NewTimer(r.cfg.Interval)
	defer timer.Stop()
	for {
		var due bool
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
			due = r.batchFull()
		case <-timer.C:
			due = r.dirty()
			if !due {
				timer.Reset(r.cfg.Interval)
			}
		}
		if !due {
			continue
		}
		r.flushInBackground(ctx)
		timer.Reset(r.cfg.Interval)
	}
}

// batchFull reports whether BatchSize records arrived since the last write started.
func (r *Reporter) batchFull() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts.Total-r.snapTotal >= int64(r.cfg.BatchSize)
}

// dirty reports whether the counts or kept records differ from the last
// written ones.
func (r *Reporter) dirty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts != r.written || len(r.kept) != r.keptWritten
}

// snap is what one write stores: the counts and the kept records.
type snap struct {
	counts Counts
	kept   []json.RawMessage
}

// snapshot returns the current counts and kept records and marks them as
// being written.
func (r *Reporter) snapshot() snap {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapTotal = r.counts.Total
	return snap{counts: r.counts, kept: r.kept[:len(r.kept):len(r.kept)]}
}

// flushInBackground writes the current counts, bounded by WriteTimeout; a
// failure is logged and repaired by the next write.
// A write cut short because Finish stopped the loop is not worth a warning:
// Finish writes the final counts itself.
func (r *Reporter) flushInBackground(loopCtx context.Context) {
	ctx, cancel := context.WithTimeout(loopCtx, r.cfg.WriteTimeout)
	defer cancel()
	if err := r.write(ctx, r.snapshot()); err != nil && loopCtx.Err() == nil {
		r.cfg.Logger.Warn("could not write task progress; the next write will retry", "task_id", r.taskID, "error", err)
	}
}

// write stores sn's counts as the task's progress, and its kept records
// when they changed since the last write, and remembers them as written.
func (r *Reporter) write(ctx context.Context, sn snap) error {
	r.mu.Lock()
	keptChanged := len(sn.kept) != r.keptWritten
	r.mu.Unlock()
	if keptChanged {
		// The records first: counts that were written say the records
		// they count were too.
		if err := r.w.SetReportRecords(ctx, r.taskID, joinArray(sn.kept)); err != nil {
			return fmt.Errorf("error writing the progress of task %s (its kept records): %w", r.taskID, err)
		}
		r.mu.Lock()
		r.keptWritten = len(sn.kept)
		r.mu.Unlock()
	}
	b, err := json.Marshal(progress{Counts: sn.counts, UpdatedAt: r.cfg.Now().UTC()})
	if err != nil {
		return fmt.Errorf("error encoding the progress of task %s: %w", r.taskID, err)
	}
	if err := r.w.SetProgress(ctx, r.taskID, b); err != nil {
		return fmt.Errorf("error writing the progress of task %s: %w", r.taskID, err)
	}
	r.mu.Lock()
	r.written = sn.counts
	r.mu.Unlock()
	return nil
}

// joinArray returns the JSON array of the entries.
func joinArray(entries []json.RawMessage) json.RawMessage {
	n := 2
	for _, e := range entries {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range entries {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
}

// keptEntry is the JSON entry of record number n: {"n", "status",
// "envelope"} and "truncated": true when the envelope was shortened to
// MaxKeptEnvelope bytes (see shorten).
func keptEntry(n int64, env reporters.Envelope) (json.RawMessage, error) {
	body, truncated, err := shorten(env)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		N         int64                  `json:"n"`
		Status    reporters.RecordStatus `json:"status"`
		Envelope  json.RawMessage        `json:"envelope"`
		Truncated bool                   `json:"truncated,omitempty"`
	}{n, env.Status, body, truncated})
}

// shorten encodes env in at most MaxKeptEnvelope bytes: as it is when it
// fits, else without its geometry, else also without its properties and
// stats, else as its status, id and message (cut to 1 KiB) only.
func shorten(env reporters.Envelope) (json.RawMessage, bool, error) {
	steps := []func(e *reporters.Envelope){
		func(*reporters.Envelope) {},
		func(e *reporters.Envelope) { e.Record.Geometry = nil },
		func(e *reporters.Envelope) { e.Record.Properties, e.Record.Stats = nil, nil },
		func(e *reporters.Envelope) {
			e.Record.System = nil
			if e.Message != nil && len(*e.Message) > 1<<10 {
				m := strings.ToValidUTF8((*e.Message)[:1<<10], "") + "…"
				e.Message = &m
			}
		},
	}
	var b []byte
	for i, step := range steps {
		step(&env)
		var err error
		if b, err = json.Marshal(env); err != nil {
			return nil, false, fmt.Errorf("error encoding the envelope: %w", err)
		}
		if len(b) <= MaxKeptEnvelope {
			return b, i > 0, nil
		}
	}
	return b, true, nil
}

// Finish stops the background writer, writes the final counts synchronously
// and returns {"records": Counts}. With no record reported it writes nothing
// and returns nil. After a failure (a cancelled ctx, a database error) it
// may be called again to retry; after a success it returns the same outputs.
func (r *Reporter) Finish(ctx context.Context) (map[string]any, error) {
	r.mu.Lock()
	r.finishing = true
	started, final := r.started, r.counts
	r.mu.Unlock()

	r.finishMu.Lock()
	defer r.finishMu.Unlock()
	if r.resultDone {
		return maps.Clone(r.result), nil
	}
	if started {
		r.stopLoop()
		<-r.loopDone
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("error finishing the progress of task %s: %w", r.taskID, err)
	}
	if final.Total > 0 {
		if err := r.write(ctx, r.snapshot()); err != nil {
			return nil, err
		}
		r.result = map[string]any{"records": final}
	}
	r.resultDone = true
	return maps.Clone(r.result), nil
}
