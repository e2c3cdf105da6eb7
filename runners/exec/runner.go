// Package exec runs each task as a subprocess: a command configured per task
// type, for handlers written in any language.
//
// The protocol between the runner and the child:
//
//   - stdin: the task row as one JSON object (the fields of wftype.Task).
//   - environment: the parent's environment, then the handler's configured
//     Env, then WF_TASK_ID, WF_TASK_TYPE, WF_SCHEMA_NAME, WF_ATTEMPT and
//     WF_RECORDS_FD=3 (later entries win, so the WF_ values cannot be
//     overridden by configuration), and TRACEPARENT (the W3C trace context
//     of the run's span) when the run is traced.
//   - file descriptor 3 (named by WF_RECORDS_FD): per-record results, one
//     envelope per line as a JSON object (reporters.Envelope, whose contract
//     is schemas/envelope.schema.json), reported to the task's reporters as
//     they arrive, so the database progress moves while the child runs.
//     Blank lines are skipped. Each line is validated against the schema: a
//     line that is not exactly one JSON object, or that breaks the schema
//     (a missing or unknown status, an unknown field, stats or system
//     missing or not an object), or that is longer than RecordLineLimit,
//     fails the task permanently with an error naming the line number and
//     the JSON pointer of each problem; the child's process group is then
//     killed. The records before the bad line stay counted. A child that
//     writes no records may ignore the descriptor.
//   - stdout: if, trimmed, it is one JSON value, that value is the task's
//     outputs; otherwise the outputs are {"stdout": "<its last 4 KiB>"};
//     empty stdout means no outputs.
//   - exit status: 0 is success; 3 (ExitPermanent) is a permanent failure
//     that is not retried (bad input); 75 (ExitSnooze, EX_TEMPFAIL) is a
//     snooze: "come back later", without counting a retry (see
//     wftype.SnoozeError), after the delay the child printed on stdout (a
//     Go duration such as 90s or 5m, or a number of seconds; nothing means
//     wftype.DefaultSnooze), its stderr kept as the reason; any other status is
//     retried. The error carries the status and the last 4 KiB of stderr
//     (of stdout when stderr is empty).
//
// The child runs in its own process group. When the task's context is done
// the whole group gets SIGTERM, then SIGKILL after the handler's KillGrace;
// when the child exits by itself, whatever it left running in its group is
// killed. Run returns only once the child is reaped and its group is gone.
// On Linux the group also dies with wf, however wf ends (even SIGKILL): the
// command runs under a shim, wf's own executable, that kills the group when
// its parent dies (see shim_linux.go). A child that outlives wf some other
// way can report nothing: its results reach the database only through the
// wf that started it, under that wf's lease.
// Output capture is bounded: only the tail of stdout and stderr is kept.
//
// Records from any language: a child needs nothing from wf but a file
// descriptor. In sh, `printf '%s\n' "$json" >&3`; in Python,
// `os.fdopen(int(os.environ["WF_RECORDS_FD"]), "w")` and one json.dumps(...)
// plus "\n" per record. Handlers that do not run under this runner report
// records elsewhere: an HTTP handler or a remote worker posts progress to
// the API (POST /tasks/{id}/progress, under the claim it was given), and
// `wf exec` (the generic worker a Cloud Run job runs) runs the task's own
// handler locally, so its exec children write to file descriptor 3 exactly
// as here.
package exec

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// ExitPermanent is the exit status with which a child says that its failure
// is permanent (for example invalid inputs): the task fails without a retry.
const ExitPermanent = 3

// ExitSnooze is the exit status with which a child says "come back later":
// the task is put off without counting a retry (EX_TEMPFAIL of sysexits.h).
const ExitSnooze = 75

// recordsFD is the child's file descriptor for per-record envelopes.
const recordsFD = 3

// drainTimeout is how long, after the process group has been killed, the
// child's output pipes may stay open with nothing unread in them before Run
// closes its ends: they stay open only if a process that left the group
// (setsid) still holds them. See Runner.drain.
const drainTimeout = 2 * time.Second

// Defaults, filled in by Config.withDefaults.
const (
	// DefaultKillGrace is how long a cancelled child has between SIGTERM and SIGKILL.
	DefaultKillGrace = 5 * time.Second
	// DefaultStdoutLimit is how much of stdout is kept to be read as the outputs JSON.
	DefaultStdoutLimit = 1 << 20
	// DefaultExcerptLimit is how much of stdout or stderr an error message or the
	// {"stdout": ...} outputs carry.
	DefaultExcerptLimit = 4 << 10
	// DefaultRecordLineLimit is the longest record line accepted on file descriptor 3.
	DefaultRecordLineLimit = 1 << 20
	// DefaultDrainLimit is how long at most the runner reads what a gone
	// child's pipes still hold (Config.DrainLimit).
	DefaultDrainLimit = time.Minute
)

// Handler is the command that runs the tasks of one type.
type Handler struct {
	// Command is the program and its arguments; the program is looked up in
	// PATH when it has no slash. Required.
	Command []string
	// Env holds extra environment variables, added to the parent's.
	Env map[string]string
	// Dir is the working directory; empty means the runner's own.
	Dir string
	// KillGrace is how long the process group has to exit after SIGTERM
	// before it gets SIGKILL; zero means DefaultKillGrace.
	KillGrace time.Duration
}

// Config configures the exec runner.
type Config struct {
	// Handlers maps each task type this runner serves to its command. The
	// engine fills it from the compiled specs.
	Handlers map[string]Handler
	// StdoutLimit is how many trailing bytes of stdout are kept; stdout longer
	// than this is never taken as the outputs JSON. Zero means DefaultStdoutLimit.
	StdoutLimit int
	// ExcerptLimit is how many trailing bytes of stderr are kept, and of stdout
	// are quoted in errors and in {"stdout": ...}. Zero means DefaultExcerptLimit.
	ExcerptLimit int
	// RecordLineLimit is the longest accepted record line. Zero means
	// DefaultRecordLineLimit.
	RecordLineLimit int
	// DrainLimit bounds how long, after a child's process group is gone,
	// the runner goes on reading output its pipes still hold (a loaded
	// machine may not run the readers for seconds) before it closes them:
	// a process that left the group and writes without end would keep
	// them full. Zero means DefaultDrainLimit.
	DrainLimit time.Duration
	// Logger receives warnings about children that could not be cleaned up;
	// nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults returns cfg with every unset field given its default; it is
// the one place where the runner's defaults live.
func (cfg Config) withDefaults() Config {
	handlers := make(map[string]Handler, len(cfg.Handlers))
	for taskType, h := range cfg.Handlers {
		h.KillGrace = cmp.Or(h.KillGrace, DefaultKillGrace)
		handlers[taskType] = h
	}
	cfg.Handlers = handlers
	cfg.StdoutLimit = cmp.Or(cfg.StdoutLimit, DefaultStdoutLimit)
	cfg.ExcerptLimit = cmp.Or(cfg.ExcerptLimit, DefaultExcerptLimit)
	cfg.RecordLineLimit = cmp.Or(cfg.RecordLineLimit, DefaultRecordLineLimit)
	cfg.DrainLimit = cmp.Or(cfg.DrainLimit, DefaultDrainLimit)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return cfg
}

// validate reports every problem with a defaulted configuration at once.
func (cfg Config) validate() error {
	var errs []error
	for _, taskType := range slices.Sorted(maps.Keys(cfg.Handlers)) {
		h := cfg.Handlers[taskType]
		if len(h.Command) == 0 || h.Command[0] == "" {
			errs = append(errs, fmt.Errorf("task type %q: the command is empty", taskType))
		}
		if h.KillGrace < 0 {
			errs = append(errs, fmt.Errorf("task type %q: kill grace is %s, want more than zero", taskType, h.KillGrace))
		}
		for name := range h.Env {
			if name == "" || strings.ContainsAny(name, "=\x00") {
				errs = append(errs, fmt.Errorf("task type %q: environment variable name %q is invalid", taskType, name))
			}
		}
	}
	for name, v := range map[string]int{"stdout limit": cfg.StdoutLimit, "excerpt limit": cfg.ExcerptLimit, "record line limit": cfg.RecordLineLimit} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s is %d, want more than zero", name, v))
		}
	}
	if cfg.DrainLimit < 0 {
		errs = append(errs, fmt.Errorf("drain limit is %s, want more than zero", cfg.DrainLimit))
	}
	return errors.Join(errs...)
}

// The runner implements the interface the dispatcher uses.
var _ runners.Runner = (*Runner)(nil)

// Runner runs ASYNCHRONOUS tasks as subprocesses (the seed's
// BackgroundRunner, priority 100).
type Runner struct {
	cfg Config
}

// New returns a runner for the task types in cfg.Handlers, or an error naming
// every invalid handler.
func New(cfg Config) (*Runner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error building exec runner: %w", err)
	}
	return &Runner{cfg: cfg}, nil
}

// Name implements runners.Runner.
func (r *Runner) Name() string { return "exec" }

// Priority implements runners.Runner: background work on this machine, after
// any remote-job runner (10).
func (r *Runner) Priority() int { return 100 }

// CanHandle implements runners.Runner: ASYNCHRONOUS tasks of a configured type.
func (r *Runner) CanHandle(mode wftype.ExecutionMode, taskType string) bool {
	_, ok := r.cfg.Handlers[taskType]
	return ok && mode == wftype.ModeAsync
}

// Run implements runners.Runner; the package comment describes the protocol.
// It does not check the task's mode, so the synchronous runner can delegate
// to it.
func (r *Runner) Run(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	h, ok := r.cfg.Handlers[task.TaskType]
	if !ok {
		return nil, wftype.Permanent(fmt.Errorf("error running exec handler: no command is configured for task type %q", task.TaskType))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("error running exec handler for task type %q: %w", task.TaskType, err)
	}
	out, err := r.run(ctx, h, task, rep)
	if err != nil {
		return nil, fmt.Errorf("error running exec handler for task type %q: %w", task.TaskType, err)
	}
	return out, nil
}

// pipes holds the parent's ends of the child's standard streams and records
// pipe, and the child's ends until the child has started.
type pipes struct {
	stdinW, stdoutR, stderrR, recordsR *os.File // ours
	stdinR, stdoutW, stderrW, recordsW *os.File // the child's
}

// newPipes creates the four pipes; on error it closes what it opened.
func newPipes() (*pipes, error) {
	p := &pipes{}
	var err error
	for _, pair := range []struct{ r, w **os.File }{
		{&p.stdinR, &p.stdinW}, {&p.stdoutR, &p.stdoutW}, {&p.stderrR, &p.stderrW}, {&p.recordsR, &p.recordsW},
	} {
		if *pair.r, *pair.w, err = os.Pipe(); err != nil {
			p.closeChild()
			p.closeOurs()
			return nil, fmt.Errorf("error creating pipe: %w", err)
		}
	}
	return p, nil
}

// closeChild closes the child's ends, which the parent must not keep: a read
// sees EOF only once every writer has closed.
func (p *pipes) closeChild() {
	for _, f := range []*os.File{p.stdinR, p.stdoutW, p.stderrW, p.recordsW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// closeOurs closes the parent's ends, unblocking any read or write on them.
func (p *pipes) closeOurs() {
	for _, f := range []*os.File{p.stdinW, p.stdoutR, p.stderrR, p.recordsR} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// run starts the child, feeds and drains it, stops it when ctx is done or a
// record line is malformed, and makes sure its process group is gone.
func (r *Runner) run(ctx context.Context, h Handler, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	taskJSON, err := json.Marshal(task)
	if err != nil {
		return nil, wftype.Permanent(fmt.Errorf("error encoding the task row: %w", err))
	}
	p, err := newPipes()
	if err != nil {
		return nil, err
	}
	// Closing our ends also unblocks the stdin writer below, whose child may
	// never read its input.
	var feeding sync.WaitGroup
	defer func() {
		p.closeOurs()
		feeding.Wait()
	}()

	cmd, err := command(h, r.env(ctx, h, task))
	if err != nil {
		p.closeChild()
		return nil, fmt.Errorf("error starting command %q: %w", h.Command[0], err)
	}
	cmd.Dir = h.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.stdinR, p.stdoutW, p.stderrW
	cmd.ExtraFiles = []*os.File{p.recordsW} // becomes fd 3 (recordsFD)
	// The thread that started the child stays until the run is over (see
	// startLocked): the child's parent-death signal is tied to it.
	over := make(chan struct{})
	defer close(over)
	err = startLocked(cmd, over)
	p.closeChild()
	if err != nil {
		return nil, fmt.Errorf("error starting command %q: %w", h.Command[0], err)
	}
	pgid := cmd.Process.Pid // Setpgid with Pgid 0: the child leads a new group

	// Feed stdin, then close it so the child sees EOF. A write error means
	// the child stopped reading, which is its own business.
	feeding.Go(func() {
		_, _ = p.stdinW.Write(taskJSON)
		_ = p.stdinW.Close()
	})

	stdout := newTailBuffer(r.cfg.StdoutLimit)
	stderr := newTailBuffer(r.cfg.ExcerptLimit)
	var (
		readers       sync.WaitGroup
		recordsErr    error
		recordsFailed = make(chan struct{})
	)
	readers.Go(func() { _, _ = io.Copy(stdout, p.stdoutR) })
	readers.Go(func() { _, _ = io.Copy(stderr, p.stderrR) })
	readers.Go(func() {
		if err := readRecords(ctx, p.recordsR, rep, r.cfg.RecordLineLimit); err != nil {
			recordsErr = err
			close(recordsFailed)
		}
	})
	drained := make(chan struct{})
	go func() {
		readers.Wait()
		close(drained)
	}()

	var (
		exited  = make(chan struct{})
		reaped  bool
		waitErr error
	)
	go func() {
		reaped, waitErr = waitLeader(cmd)
		close(exited)
	}()

	// Wait for the child to exit, or stop it.
	var ctxErr error
	stopping := true
	select {
	case <-exited:
		stopping = false
	case <-ctx.Done():
		ctxErr = ctx.Err()
	case <-recordsFailed:
	}
	if stopping {
		signalGroup(pgid, syscall.SIGTERM)
		grace := time.NewTimer(h.KillGrace)
		for exitedCh, drainedCh := exited, drained; exitedCh != nil || drainedCh != nil; {
			select {
			case <-exitedCh:
				exitedCh = nil
			case <-drainedCh:
				drainedCh = nil
			case <-grace.C:
				exitedCh, drainedCh = nil, nil
			}
		}
		grace.Stop()
	}
	// The leader is alive or an unreaped zombie, so the group id is still
	// ours: kill what is left of the group, then reap the leader.
	signalGroup(pgid, syscall.SIGKILL)
	<-exited
	if !reaped {
		waitErr = cmd.Wait()
	}
	r.drain(ctx, h, task, p, drained)

	if ctxErr != nil {
		return nil, fmt.Errorf("the command was stopped: %w", ctxErr)
	}
	if recordsErr != nil {
		return nil, recordsErr
	}
	if waitErr != nil {
		return nil, r.exitError(waitErr, stdout, stderr)
	}
	return r.outputs(stdout)
}

// drain waits until the readers of the child's output are done (drained),
// after its process group is gone. Output still in the pipes is read
// however long the readers take (a loaded machine may not run them for
// seconds): closing them then would lose the records and outputs a child
// wrote before it exited. Only when the pipes have stayed open and empty
// for drainTimeout, held by a process that left the group, or after
// Config.DrainLimit in all (such a process may keep them full), are our
// ends closed.
func (r *Runner) drain(ctx context.Context, h Handler, task *wftype.Task, p *pipes, drained <-chan struct{}) {
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
	limit := time.Now().Add(r.cfg.DrainLimit)
	for {
		select {
		case <-drained:
			return
		case <-timer.C:
		}
		if time.Now().Before(limit) && unread(p.stdoutR)+unread(p.stderrR)+unread(p.recordsR) > 0 {
			timer.Reset(drainTimeout) // the readers are behind, not a writer stuck
			continue
		}
		r.cfg.Logger.WarnContext(ctx, "a process that left the task's process group still holds its output; closing it",
			"task_id", task.ID, "task_type", task.TaskType, "command", h.Command[0])
		p.closeOurs()
		<-drained
		return
	}
}

// env returns the child's environment: the parent's, the handler's, then the
// task's WF_ variables and, when the run is traced, TRACEPARENT, the W3C
// trace context of the run's span, for the child's own spans (later entries
// win in os/exec).
func (r *Runner) env(ctx context.Context, h Handler, task *wftype.Task) []string {
	env := os.Environ()
	for _, name := range slices.Sorted(maps.Keys(h.Env)) {
		env = append(env, name+"="+h.Env[name])
	}
	if tp := tracing.Traceparent(ctx); tp != "" {
		env = append(env, "TRACEPARENT="+tp)
	}
	return append(env,
		"WF_TASK_ID="+task.ID.String(),
		"WF_TASK_TYPE="+task.TaskType,
		"WF_SCHEMA_NAME="+task.SchemaName,
		"WF_ATTEMPT="+strconv.Itoa(task.Attempts),
		"WF_RECORDS_FD="+strconv.Itoa(recordsFD),
	)
}

// exitError describes a failed child: its exit status and the tail of its
// stderr (or of its stdout when stderr is empty). ExitPermanent makes the
// error permanent.
func (r *Runner) exitError(waitErr error, stdout, stderr *tailBuffer) error {
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) {
		return fmt.Errorf("error waiting for the command: %w", waitErr)
	}
	msg := "the command failed with " + exitErr.ProcessState.String()
	if text := bytes.TrimSpace(stderr.Bytes()); len(text) > 0 {
		msg += "; stderr: " + string(text)
	} else if text := bytes.TrimSpace(tail(stdout.Bytes(), r.cfg.ExcerptLimit)); len(text) > 0 {
		msg += "; stdout: " + string(text)
	} else {
		msg += "; it wrote nothing to stderr or stdout"
	}
	err := errors.New(msg)
	switch exitErr.ExitCode() {
	case ExitPermanent:
		return wftype.Permanent(err)
	case ExitSnooze:
		return snoozeError(stdout, stderr)
	}
	return err
}

// snoozeError reads a snoozing child's delay from its stdout and its reason
// from its stderr. A delay that does not parse is wftype.DefaultSnooze,
// said so in the reason.
func snoozeError(stdout, stderr *tailBuffer) error {
	text := string(bytes.TrimSpace(stdout.Bytes()))
	reason := string(bytes.TrimSpace(stderr.Bytes()))
	delay, err := wftype.ParseSnoozeDelay(text)
	if err != nil {
		reason = strings.TrimPrefix(reason+"; ", "; ") + err.Error()
	}
	return wftype.Snooze(delay, reason)
}

// outputs turns a successful child's stdout into the task's outputs.
func (r *Runner) outputs(stdout *tailBuffer) (json.RawMessage, error) {
	raw := stdout.Bytes()
	text := bytes.TrimSpace(raw)
	if len(text) == 0 {
		return nil, nil
	}
	if !stdout.Truncated() && json.Valid(text) {
		if bytes.Equal(text, []byte("null")) {
			return nil, nil
		}
		return json.RawMessage(text), nil
	}
	out, err := json.Marshal(map[string]string{"stdout": string(tail(raw, r.cfg.ExcerptLimit))})
	if err != nil {
		return nil, fmt.Errorf("error encoding stdout as outputs: %w", err)
	}
	return out, nil
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}

// signalGroup sends sig to every process in the group. ESRCH (the group is
// already empty) is expected and ignored.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}
