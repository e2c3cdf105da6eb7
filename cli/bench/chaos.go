package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/localpg"
	"github.com/wfhq/wf/runners/builtin"
)

// ChaosConfig configures `wf bench chaos`: real `wf run` instances on one
// local PostgreSQL, with faults injected while tasks, events and schedules
// flow, and the invariants checked at the end (see RunChaos).
type ChaosConfig struct {
	// Duration of the fault phase. Default 1 minute.
	Duration time.Duration
	// Instances is how many `wf run` processes work. Default 3.
	Instances int
	// KillEvery: one instance is killed (SIGKILL) and restarted at random
	// intervals of KillEvery/2 to KillEvery*3/2. Default 4s.
	KillEvery time.Duration
	// TerminateEvery: the leader's election backend is ended
	// (pg_terminate_backend) this often. Default 15s.
	TerminateEvery time.Duration
	// Rate is how many tasks, and a quarter as many events, are offered
	// per second. Default 20.
	Rate float64
	// DrainTimeout bounds the wait, after the faults, for every task and
	// event to settle. Default 5 minutes.
	DrainTimeout time.Duration
	// Seed makes the faults' random choices repeatable (0: random).
	Seed uint64
	// Executable is the wf binary run as the instances. Required.
	Executable string
	// DataDir holds the local cluster; empty means a temporary folder.
	DataDir string
	// Keep leaves the folder (instance logs, run log, cluster) in place.
	Keep bool
	// Logger receives progress lines; nil discards them.
	Logger *slog.Logger
}

func (c ChaosConfig) withDefaults() ChaosConfig {
	c.Duration = cmp.Or(c.Duration, time.Minute)
	c.Instances = cmp.Or(c.Instances, 3)
	c.KillEvery = cmp.Or(c.KillEvery, 4*time.Second)
	c.TerminateEvery = cmp.Or(c.TerminateEvery, 15*time.Second)
	c.Rate = cmp.Or(c.Rate, 20)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, 5*time.Minute)
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

func (c ChaosConfig) validate() error {
	switch {
	case c.Executable == "":
		return errors.New("chaos needs the wf executable to run as its instances")
	case c.Duration <= 0 || c.KillEvery <= 0 || c.TerminateEvery <= 0 || c.DrainTimeout <= 0 || c.Rate <= 0:
		return errors.New("chaos durations and rate must be positive")
	case c.Instances < 2:
		return fmt.Errorf("chaos needs at least 2 instances (a leader change needs a follower), got %d", c.Instances)
	}
	return nil
}

// ChaosResult is what a chaos run did and found.
type ChaosResult struct {
	Seed      uint64        `json:"seed"`
	Duration  time.Duration `json:"duration"`
	Instances int           `json:"instances"`
	Kills     int           `json:"kills"`
	// SelfExits are instances that exited by themselves and were restarted
	// (at start-up while PostgreSQL restarted: expected; else a violation).
	SelfExits          int `json:"self_exits"`
	LeaderTerminations int `json:"leader_terminations"`
	PostgresRestarts   int `json:"postgres_restarts"`
	// Enqueued tasks (acknowledged), and enqueue calls that failed (their
	// task may or may not exist).
	Enqueued      int `json:"enqueued"`
	EnqueueFailed int `json:"enqueue_failed"`
	// Emitted events (acknowledged), and emits that failed.
	Emitted    int `json:"emitted"`
	EmitFailed int `json:"emit_failed"`
	// Ticks fired by the @every 2s schedule.
	Ticks int `json:"ticks"`
	// Runs of handlers, and re-runs (a second or later run of a task).
	Runs   int `json:"runs"`
	Reruns int `json:"reruns"`
	// DuplicateKeySamples is how many times live dedup keys were checked.
	DuplicateKeySamples int `json:"duplicate_key_samples"`
	// Drained is how long, after the faults, everything took to settle.
	Drained time.Duration `json:"drained"`
	// Violations of the invariants; a run passes when there are none.
	Violations []string `json:"violations"`
}

// Names in the chaos spec set.
const (
	chaosWork     = "chaos_work"      // enqueued by the bench
	chaosOnEvent  = "chaos_on_event"  // created by the subscription
	chaosTick     = "chaos_tick"      // created by the schedule
	chaosEvent    = "chaos.item"      // the events the bench emits
	chaosSchedule = "chaos-every-2s"  // the schedule
	chaosLease    = 15 * time.Second  // the tasks' visibility timeout
	chaosTickStep = 2 * time.Second   // the schedule's interval
	chaosDedupMod = 10                // dedup keys the enqueues share
	chaosLogName  = "runs.log"        // the handlers' run log
	chaosGenEnv   = "WF_CHAOS_GEN"    // the instance generation a handler runs under
	chaosLogEnv   = "WF_CHAOS_RUNLOG" // where handlers append their runs
)

// chaosSpecs: every handler is an exec command that appends "start" and
// "end" lines (task id, attempt, instance generation) to the run log, so the
// order of runs is known whatever the clocks say.
const chaosSpecs = `kind: TaskType
name: chaos_work
description: Enqueued by wf bench chaos; logs its runs.
handler:
  exec:
    command: ["sh", "-c", "echo \"start $WF_TASK_ID $WF_ATTEMPT $WF_CHAOS_GEN\" >> \"$WF_CHAOS_RUNLOG\"; sleep 0.$(( $$ % 4 )); echo \"end $WF_TASK_ID $WF_ATTEMPT $WF_CHAOS_GEN\" >> \"$WF_CHAOS_RUNLOG\""]
inputs:
  type: object
max_retries: 25
visibility_timeout: 15s
---
kind: TaskType
name: chaos_on_event
description: Created by wf bench chaos's subscription; logs its runs.
handler:
  exec:
    command: ["sh", "-c", "echo \"start $WF_TASK_ID $WF_ATTEMPT $WF_CHAOS_GEN\" >> \"$WF_CHAOS_RUNLOG\"; echo \"end $WF_TASK_ID $WF_ATTEMPT $WF_CHAOS_GEN\" >> \"$WF_CHAOS_RUNLOG\""]
inputs:
  type: object
  required: [n]
  properties:
    n: {type: integer}
max_retries: 25
visibility_timeout: 15s
---
kind: TaskType
name: chaos_tick
description: Fired by wf bench chaos's schedule.
handler: {builtin: noop}
max_retries: 25
visibility_timeout: 15s
---
kind: Subscription
name: chaos-items
event_type: chaos.item
task_type: chaos_on_event
inputs:
  n: int(event.payload.n)
---
kind: Schedule
name: chaos-every-2s
cron: "@every 2s"
task_type: chaos_tick
inputs: {}
`

// RunChaos runs the soak: Instances `wf run` processes on one local
// PostgreSQL; for Duration it offers tasks (some sharing dedup keys) and
// events while a schedule fires every 2 seconds, kills a random instance
// (SIGKILL) every few seconds and restarts it, ends the leader's database
// session now and then, and restarts PostgreSQL once, half-way. Then it
// waits for everything to settle and checks the invariants:
//
//   - nothing lost: every acknowledged task is COMPLETED; every acknowledged
//     event created exactly one task, an unacknowledged one at most one;
//   - nothing stuck: no task other than COMPLETED, no event left;
//   - re-runs only for in-flight work of killed instances, and never two
//     runs of one task at once (read from the order of the run log, not
//     from clocks);
//   - every schedule tick exactly once: the ticks are consecutive steps of
//     the schedule, each with one COMPLETED task;
//   - at most one live task per dedup key (sampled throughout).
//
// Faults are chosen at random from Seed; the invariants do not depend on
// timing.
func RunChaos(ctx context.Context, cfg ChaosConfig) (*ChaosResult, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The environment of the other modes: a durable local cluster and a
	// database of the run's own. Chaos restarts the cluster, so it never
	// runs on a server named by URL.
	e, err := setUp(ctx, Config{Mode: "chaos", Runner: RunnerBuiltin, DataDir: cfg.DataDir, Keep: cfg.Keep,
		Logger: cfg.Logger, Executable: cfg.Executable, Stderr: io.Discard})
	if err != nil {
		return nil, err
	}
	defer e.tearDown()
	c := &chaos{cfg: cfg, env: e, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		res: &ChaosResult{Seed: cfg.Seed, Instances: cfg.Instances}, killed: map[string]bool{}}
	if err := c.writeSpecs(); err != nil {
		return nil, err
	}
	if cfg.Keep {
		cfg.Logger.Info("chaos folder kept", "dir", e.workDir)
	}
	c.procs = make([]*chaosProc, cfg.Instances)
	for i := range c.procs {
		if err := c.start(i); err != nil {
			c.stopAll()
			return nil, err
		}
	}
	defer c.stopAll()
	started := time.Now()
	if err := c.faults(ctx); err != nil {
		return nil, err
	}
	c.res.Duration = time.Since(started)
	c.faultsEnd = time.Now()
	drainStart := time.Now()
	if err := c.drain(ctx); err != nil {
		c.settled = time.Now()
		c.violate("%v", err)
	}
	c.res.Drained = time.Since(drainStart)
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	return c.res, nil
}

// chaos is one run's state.
type chaos struct {
	cfg     ChaosConfig
	env     *env
	rng     *rand.Rand
	res     *ChaosResult
	specs   *spec.Set
	logPath string

	procs     []*chaosProc
	gen       int
	faultsEnd time.Time
	settled   time.Time // when the drain saw everything settled

	mu      sync.Mutex
	killed  map[string]bool // generations killed with SIGKILL
	acked   []uuid.UUID     // tasks the client acknowledged
	emitted map[int64]bool  // events: n → acknowledged (false: unknown)
	nextN   int64
}

// chaosProc is one running `wf run` instance.
type chaosProc struct {
	gen    string
	cmd    *exec.Cmd
	exited chan error
}

func (c *chaos) violate(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.Violations = append(c.res.Violations, fmt.Sprintf(format, args...))
}

// writeSpecs writes and compiles the chaos spec set.
func (c *chaos) writeSpecs() error {
	c.env.specPath = filepath.Join(c.env.workDir, "chaos.yaml")
	c.logPath = filepath.Join(c.env.workDir, chaosLogName)
	if err := os.WriteFile(c.env.specPath, []byte(chaosSpecs), 0o644); err != nil {
		return fmt.Errorf("error writing the chaos specs: %w", err)
	}
	if err := os.WriteFile(c.logPath, nil, 0o666); err != nil {
		return fmt.Errorf("error creating the run log: %w", err)
	}
	set, err := spec.Load(spec.Options{Builtins: builtin.NewRegistry().Names()}, c.env.specPath)
	if err != nil {
		return fmt.Errorf("error compiling the chaos specs: %w", err)
	}
	c.specs = set
	return nil
}

// start starts instance slot i as a new generation.
func (c *chaos) start(i int) error {
	c.gen++
	gen := fmt.Sprintf("i%d.g%d", i, c.gen)
	logFile, err := os.OpenFile(c.instanceLog(i), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("error opening the instance log: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "--- generation %s\n", gen)
	cmd := exec.Command(c.cfg.Executable, "run", "--specs", c.env.specPath)
	cmd.Dir = c.env.workDir
	cmd.Env = append(c.env.instanceEnv(),
		"WF_HEARTBEAT_INTERVAL=1s", "WF_JANITOR_INTERVAL=1s", "WF_POLL_INTERVAL=500ms", "WF_GRACE=5s",
		chaosGenEnv+"="+gen, chaosLogEnv+"="+c.logPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("error starting wf run: %w", err)
	}
	p := &chaosProc{gen: gen, cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	c.procs[i] = p
	return nil
}

// kill kills instance slot i with SIGKILL, waits for it, and starts its
// next generation.
func (c *chaos) kill(i int) error {
	p := c.procs[i]
	c.mu.Lock()
	c.killed[p.gen] = true
	c.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	c.res.Kills++
	return c.start(i)
}

// stopAll stops the instances that run (SIGTERM, then SIGKILL after a
// minute).
func (c *chaos) stopAll() {
	for _, p := range c.procs {
		if p != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range c.procs {
		if p == nil {
			continue
		}
		select {
		case <-p.exited:
		case <-time.After(time.Minute):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	for i := range c.procs {
		c.procs[i] = nil
	}
}

// faults runs the fault phase: the workload in the background, and the
// kills, leader terminations and the PostgreSQL restart in turn.
func (c *chaos) faults(ctx context.Context) error {
	phase, stop := context.WithTimeout(ctx, c.cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	c.emitted = map[int64]bool{}
	wg.Go(func() { c.offer(phase) })
	wg.Go(func() { c.sampleKeys(phase) })
	defer wg.Wait()

	restartAt := time.Now().Add(c.cfg.Duration / 2)
	restarted := false
	nextKill := time.Now().Add(c.jitter(c.cfg.KillEvery))
	nextTerminate := time.Now().Add(c.jitter(c.cfg.TerminateEvery))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-phase.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		case <-tick.C:
		}
		now := time.Now()
		for i, p := range c.procs {
			select {
			case err := <-p.exited:
				// A supervisor (systemd, Kubernetes) restarts an instance
				// that exits. One that failed its start-up steps (connecting,
				// migrating) while the database restarted did what it
				// should: fail fast. Any other exit is a defect.
				last := c.lastLogLine(i)
				c.res.SelfExits++
				if !startupFailure(last) {
					c.violate("instance %s exited on its own (%v): %s", p.gen, err, last)
				}
				if err := c.start(i); err != nil {
					return err
				}
			default:
			}
		}
		switch {
		case !restarted && now.After(restartAt):
			restarted = true
			if err := c.restartPostgres(ctx); err != nil {
				return err
			}
		case now.After(nextKill):
			nextKill = now.Add(c.jitter(c.cfg.KillEvery))
			i := c.rng.IntN(len(c.procs))
			c.cfg.Logger.Info("chaos: killing an instance", "generation", c.procs[i].gen)
			if err := c.kill(i); err != nil {
				return err
			}
		case now.After(nextTerminate):
			nextTerminate = now.Add(c.jitter(c.cfg.TerminateEvery))
			c.terminateLeader(ctx)
		}
	}
}

// startupFailure reports whether an instance's last words are those of a
// failed start-up step: connecting to PostgreSQL, applying migrations or
// creating the partitions ahead (Engine.Run, before it claims anything).
func startupFailure(last string) bool {
	return strings.HasPrefix(last, "wf: error connecting to PostgreSQL") ||
		strings.HasPrefix(last, "wf: error preparing migrations") ||
		strings.HasPrefix(last, "wf: error applying migrations") ||
		strings.HasPrefix(last, "wf: error preparing partitions")
}

// lastLogLine returns the last line instance slot i wrote to its log.
func (c *chaos) lastLogLine(i int) string {
	b, err := os.ReadFile(c.instanceLog(i))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// instanceLog is the log file of instance slot i (all its generations).
func (c *chaos) instanceLog(i int) string {
	return filepath.Join(c.env.workDir, "instance-"+strconv.Itoa(i)+".log")
}

// jitter returns a duration between d/2 and 3d/2.
func (c *chaos) jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(c.rng.Int64N(int64(d)+1))
}

// restartPostgres stops the cluster (fast: sessions are ended) and starts it
// again on the same port.
func (c *chaos) restartPostgres(ctx context.Context) error {
	c.cfg.Logger.Info("chaos: restarting PostgreSQL")
	if err := c.env.cluster.Stop(ctx); err != nil {
		return err
	}
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: c.env.cluster.DataDir(), Durable: true})
	if err != nil {
		return fmt.Errorf("error restarting PostgreSQL: %w", err)
	}
	c.env.cluster = cluster
	c.res.PostgresRestarts++
	return nil
}

// terminateLeader ends the leader's election session, if there is a leader.
func (c *chaos) terminateLeader(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pid, ok, err := c.env.store.LeaderBackend(qctx, "wf-leader:"+serviceName+":%")
	if err != nil || !ok {
		return
	}
	if ok, err := c.env.store.TerminateBackend(qctx, pid); err == nil && ok {
		c.cfg.Logger.Info("chaos: terminated the leader's backend", "pid", pid)
		c.res.LeaderTerminations++
	}
}
