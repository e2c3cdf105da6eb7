package leader_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/leader"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

type instance struct {
	elector *leader.Elector
	bus     *signalbus.Bus
	leading atomic.Int32 // OnElected contexts currently alive
	cancel  context.CancelFunc
	done    chan struct{}
}

func start(t *testing.T, url, owner string) *instance {
	t.Helper()
	inst := newInstance(t, url, owner, nil, 100*time.Millisecond)
	inst.run(t)
	return inst
}

// newInstance returns an instance that polls every poll on clk (nil: the
// wall clock), not running yet: subscribe to its bus, then run it.
func newInstance(t *testing.T, url, owner string, clk clock.Clock, poll time.Duration) *instance {
	t.Helper()
	cc, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	inst := &instance{bus: signalbus.New(), done: make(chan struct{})}
	inst.elector, err = leader.New(leader.Config{
		Name: "svc", ConnConfig: cc, Owner: owner, PollInterval: poll, Clock: clk, Bus: inst.bus,
		TaskTypes: func() []string { return []string{"noop"} },
		OnElected: func(ctx context.Context) {
			inst.leading.Add(1)
			<-ctx.Done()
			inst.leading.Add(-1)
		},
	})
	require.NoError(t, err)
	return inst
}

// run runs the instance until the test ends.
func (inst *instance) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inst.cancel = cancel
	go func() { defer close(inst.done); inst.elector.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-inst.done })
}

func TestOneLeaderAndFailover(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	a, b := start(t, url, "a"), start(t, url, "b")

	require.Eventually(t, func() bool { return a.elector.IsLeader() != b.elector.IsLeader() }, 30*time.Second, 10*time.Millisecond)
	old, other := a, b
	if b.elector.IsLeader() {
		old, other = b, a
	}
	oldOwner := "a"
	if old == b {
		oldOwner = "b"
	}
	// Several polls later there is still exactly one leader.
	for range 3 {
		<-time.After(120 * time.Millisecond)
		require.True(t, old.elector.IsLeader())
		require.False(t, other.elector.IsLeader())
	}
	require.Eventually(t, func() bool { return old.leading.Load() == 1 }, 30*time.Second, 10*time.Millisecond,
		"the leader runs its leader-only work once")

	// Kill the leader's backend: the other instance takes over, the old one
	// stops acting as leader.
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var killed bool
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
		"wf-leader:svc:"+oldOwner).Scan(&killed))
	require.True(t, killed)

	require.Eventually(t, func() bool { return other.elector.IsLeader() }, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return old.leading.Load() == 0 }, 30*time.Second, 10*time.Millisecond)
	// IsLeader turns true before OnElected has started: wait for it.
	require.Eventually(t, func() bool { return other.leading.Load() == 1 }, 30*time.Second, 10*time.Millisecond,
		"the new leader runs its leader-only work once")
	// The old instance rejoins as a follower.
	for range 3 {
		<-time.After(120 * time.Millisecond)
		require.False(t, old.elector.IsLeader())
	}
}

func TestLeaderForwardsNotifications(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	a := start(t, url, "solo")
	got := make(chan string, 16)
	a.bus.Subscribe(signalbus.TaskStatusChanged, func(p string) { got <- p })
	require.Eventually(t, a.elector.IsLeader, 30*time.Second, 10*time.Millisecond)
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	notifyForwarded(t, conn, "task_status_changed", "CANCELLED:x", got)
}

// notifyForwarded sends payload on channel from conn, another session of
// the database, and fails t unless the leader forwards the payload to got,
// its bus subscriber, within 30 seconds; msgAndArgs say when, as in require.
func notifyForwarded(t *testing.T, conn *pgx.Conn, channel, payload string, got <-chan string, msgAndArgs ...any) {
	t.Helper()
	_, err := conn.Exec(context.Background(), `SELECT pg_notify($1, $2)`, channel, payload)
	require.NoError(t, err)
	select {
	case p := <-got:
		require.Equal(t, payload, p, msgAndArgs...)
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the notification was not forwarded", msgAndArgs...)
	}
}

// TestLeaderSweepsEveryPollIntervalUnderNotifications: the leader sweeps
// (EventQueued and TaskQueued with no payload) once per poll interval of
// its clock even when task notifications come more often than that, as
// under steady task traffic; a wait for notifications whose timeout began
// anew at each one never ended, so it never swept. Each step moves the
// clock a third of the interval and then sends a notification, which the
// leader forwards before the next step.
func TestLeaderSweepsEveryPollIntervalUnderNotifications(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	clk := clock.NewFake(clock.Now())
	const poll = time.Minute
	a := newInstance(t, url, "solo", clk, poll)
	sweeps := make(chan struct{}, 16)
	forwarded := make(chan string, 16)
	a.bus.Subscribe(signalbus.EventQueued, func(p string) {
		if p == "" {
			select {
			case sweeps <- struct{}{}:
			default: // the test has failed already
			}
		}
	})
	a.bus.Subscribe(signalbus.TaskQueued, func(p string) {
		if p != "" {
			select {
			case forwarded <- p:
			default: // the test has failed already
			}
		}
	})
	a.run(t)
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}
	wait(sweeps, "no sweep when elected") // its sweep ticker runs from then on

	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	for interval := range 3 {
		for step := range 3 {
			clk.Advance(poll / 3)
			notifyForwarded(t, conn, "new_task_queued", "noop", forwarded, "interval %d, step %d", interval, step)
			if step < 2 {
				require.Empty(t, sweeps, "interval %d, step %d: a sweep before the interval passed", interval, step)
			}
		}
		wait(sweeps, "no sweep in a poll interval of notifications")
	}
}
