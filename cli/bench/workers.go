package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/wftype"
)

// workers are the engines of a run: one in the bench process, or `wf run`
// processes.
type workers interface {
	// finished is how many tasks the workers wrote as finished, when they
	// can tell (in process); -1 otherwise.
	finished() int64
	// timings returns when each task started running and when its outcome
	// was committed, when the workers can tell (in process).
	timings() (starts, ends map[uuid.UUID]time.Time, ok bool)
	// pids are the instance processes (none in process).
	pids() []int
	// stop shuts the workers down gracefully and waits for them. It is
	// safe to call again: later calls return the first call's error, so a
	// run may defer it and still stop the workers itself to measure them.
	stop() error
}

// startWorkers starts the run's workers and waits until they are connected.
func startWorkers(ctx context.Context, e *env, record bool) (workers, error) {
	if e.cfg.Instances == 0 {
		return startInProcess(ctx, e, record)
	}
	return startInstances(ctx, e)
}

// inProcess is one engine running in the bench process.
type inProcess struct {
	cancel context.CancelFunc
	done   chan error
	pool   *pgxpool.Pool
	count  atomic.Int64

	record bool
	mu     sync.Mutex
	starts map[uuid.UUID]time.Time
	ends   map[uuid.UUID]time.Time

	stopOnce sync.Once
	stopErr  error
}

func startInProcess(ctx context.Context, e *env, record bool) (*inProcess, error) {
	w := &inProcess{done: make(chan error, 1), record: record}
	if record {
		w.starts, w.ends = map[uuid.UUID]time.Time{}, map[uuid.UUID]time.Time{}
	}
	// The engine's pool: claims, completions and heartbeats share it.
	var err error
	w.pool, err = e.newPool(ctx, 8)
	if err != nil {
		return nil, err
	}
	// Built from the specs as `wf run` builds its engine: the runners,
	// rules and leader services are those of the bench's task type.
	eng, err := engine.New(engine.Config{
		Name: serviceName, Pool: w.pool, Specs: e.specs,
		Slots: e.cfg.Slots, ClaimAhead: claimAhead(e.cfg), PollInterval: e.cfg.PollInterval, Observer: w, Logger: e.cfg.Logger, Unfair: e.cfg.Unfair,
		TracerProvider: e.cfg.TracerProvider,
	})
	if err != nil {
		w.pool.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	go func() { w.done <- eng.Run(runCtx) }()
	// Wait for leadership, so the run measures the leader's path (LISTEN).
	deadline := time.After(30 * time.Second)
	for !eng.IsLeader() {
		select {
		case <-eng.LeaderChanged():
		case <-deadline:
			_ = w.stop()
			return nil, errors.New("error starting the bench engine: it did not become leader within 30s")
		case err := <-w.done:
			w.pool.Close()
			return nil, fmt.Errorf("error starting the bench engine: %w", err)
		}
	}
	return w, nil
}

// Claimed implements execution.Observer: it is called as soon as a claim
// returns, just before its tasks start.
func (w *inProcess) Claimed(tasks []wftype.Task, _ time.Duration) {
	if !w.record {
		return
	}
	now := time.Now()
	w.mu.Lock()
	for i := range tasks {
		w.starts[tasks[i].ID] = now
	}
	w.mu.Unlock()
}

// Finished implements execution.Observer: it is called once the outcome is committed.
func (w *inProcess) Finished(task *wftype.Task, _ wftype.TaskStatus, _ time.Duration) {
	w.count.Add(1)
	if w.record {
		now := time.Now()
		w.mu.Lock()
		w.ends[task.ID] = now
		w.mu.Unlock()
	}
}

func (w *inProcess) finished() int64 { return w.count.Load() }

func (w *inProcess) timings() (map[uuid.UUID]time.Time, map[uuid.UUID]time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starts, w.ends, w.record
}

func (w *inProcess) pids() []int { return nil }

func (w *inProcess) stop() error {
	w.stopOnce.Do(func() {
		w.cancel()
		w.stopErr = <-w.done
		w.pool.Close()
	})
	return w.stopErr
}

// instances are `wf run` processes.
type instances struct {
	cmds []*exec.Cmd
	wait []chan error

	stopOnce sync.Once
	stopErr  error
}

func startInstances(ctx context.Context, e *env) (*instances, error) {
	w := &instances{}
	for i := 0; i < e.cfg.Instances; i++ {
		cmd := exec.Command(e.cfg.Executable, "run",
			"--slots", strconv.Itoa(e.cfg.Slots),
			"--poll-interval", e.cfg.PollInterval.String(),
			"--specs", e.specPath)
		cmd.Dir = e.workDir
		cmd.Env = e.instanceEnv()
		cmd.Stdout, cmd.Stderr = e.cfg.Stderr, e.cfg.Stderr
		if err := cmd.Start(); err != nil {
			_ = w.stop()
			return nil, fmt.Errorf("error starting wf run: %w", err)
		}
		ch := make(chan error, 1)
		go func() { ch <- cmd.Wait() }()
		w.cmds, w.wait = append(w.cmds, cmd), append(w.wait, ch)
	}
	// Ready when every instance holds its election connection.
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := e.store.CountSessions(ctx, "wf-leader:"+serviceName+":%")
		if err != nil {
			_ = w.stop()
			return nil, err
		}
		if n >= e.cfg.Instances {
			return w, nil
		}
		for i, ch := range w.wait {
			select {
			case err := <-ch:
				ch <- err
				_ = w.stop()
				return nil, fmt.Errorf("error starting wf run: instance %d exited: %v", i, err)
			default:
			}
		}
		if time.Now().After(deadline) {
			_ = w.stop()
			return nil, fmt.Errorf("error starting wf run: %d of %d instances connected within 60s", n, e.cfg.Instances)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// instanceEnv is the environment of a `wf run` instance on the run's
// database: this process's, then the instance's settings.
func (e *env) instanceEnv() []string {
	return append(os.Environ(),
		"WF_DATABASE_URL="+e.dbURL, "WF_NAME="+serviceName, "WF_LOG_LEVEL=warn", "WF_LOG_FORMAT=text",
		"WF_CONFIG=", "WF_DATA_DIR="+e.workDir, "WF_LISTEN=127.0.0.1:0")
}

func (w *instances) finished() int64 { return -1 }

func (w *instances) timings() (map[uuid.UUID]time.Time, map[uuid.UUID]time.Time, bool) {
	return nil, nil, false
}

// peakRSSMB is the largest peak resident memory (VmHWM) of the running
// instances.
func (w *instances) peakRSSMB() float64 {
	var peak int64
	for _, c := range w.cmds {
		_, hwm := processRSS(c.Process.Pid)
		peak = max(peak, hwm)
	}
	return float64(peak) / 1024
}

func (w *instances) pids() []int {
	out := make([]int, len(w.cmds))
	for i, c := range w.cmds {
		out[i] = c.Process.Pid
	}
	return out
}

// stop sends SIGTERM to every instance, waits up to a minute, then kills.
func (w *instances) stop() error {
	w.stopOnce.Do(func() { w.stopErr = w.stopAll() })
	return w.stopErr
}

// stopAll is stop's one run.
func (w *instances) stopAll() error {
	for _, c := range w.cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	timeout := time.After(time.Minute)
	for i, ch := range w.wait {
		select {
		case err := <-ch:
			if err != nil {
				errs = append(errs, fmt.Errorf("wf run instance %d: %w", i, err))
			}
		case <-timeout:
			_ = w.cmds[i].Process.Kill()
			<-ch
			errs = append(errs, fmt.Errorf("wf run instance %d did not stop within a minute", i))
		}
	}
	return errors.Join(errs...)
}

// claimAhead is the engine's ClaimAhead for cfg: the default, or off.
func claimAhead(cfg Config) int {
	if cfg.NoClaimAhead {
		return -1
	}
	return 0
}
