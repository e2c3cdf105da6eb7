package dispatch_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// readGate holds back what PostgreSQL sends on the connections it gates
// while it is closed: the server runs and commits a statement, and its
// answer waits in the socket until the gate opens or the client gives up
// (sets a read deadline, as pgx does when a query's context ends).
type readGate struct {
	mu       sync.Mutex
	closed   bool
	opened   chan struct{} // closed by open
	deadline chan struct{} // closed when a deadline is set on a held read
	conns    []*gatedConn
}

func newReadGate() *readGate {
	return &readGate{opened: make(chan struct{}), deadline: make(chan struct{})}
}

// close holds back the reads of the connections open now.
func (g *readGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

// open lets every held read go on.
func (g *readGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.closed = false
		close(g.opened)
	}
}

// dial opens a TCP connection through the gate.
func (g *readGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	gc := &gatedConn{Conn: c, g: g, changed: make(chan struct{}, 1)}
	g.mu.Lock()
	g.conns = append(g.conns, gc)
	g.mu.Unlock()
	return gc, nil
}

type gatedConn struct {
	net.Conn
	g            *readGate
	readDeadline time.Time // guarded by g.mu
	changed      chan struct{}
}

func (c *gatedConn) setDeadline(t time.Time) {
	c.g.mu.Lock()
	c.readDeadline = t
	held := c.g.closed && !t.IsZero()
	c.g.mu.Unlock()
	if held {
		select {
		case <-c.g.deadline:
		default:
			close(c.g.deadline)
		}
	}
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *gatedConn) SetDeadline(t time.Time) error {
	c.setDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *gatedConn) SetReadDeadline(t time.Time) error {
	c.setDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *gatedConn) Read(p []byte) (int, error) {
	for {
		c.g.mu.Lock()
		closed, dl, opened := c.g.closed, c.readDeadline, c.g.opened
		c.g.mu.Unlock()
		if !closed {
			return c.Conn.Read(p)
		}
		var expire <-chan time.Time
		if !dl.IsZero() {
			if !time.Now().Before(dl) {
				return 0, os.ErrDeadlineExceeded
			}
			timer := time.NewTimer(time.Until(dl))
			defer timer.Stop()
			expire = timer.C
		}
		select {
		case <-opened:
		case <-c.changed:
		case <-expire:
		}
	}
}

// finishedRuns signals each outcome the dispatcher wrote
// (execution.Observer).
type finishedRuns struct{ c chan struct{} }

func (f *finishedRuns) Claimed([]wftype.Task, time.Duration) {}
func (f *finishedRuns) Finished(*wftype.Task, wftype.TaskStatus, time.Duration) {
	f.c <- struct{}{}
}

// TestClaimAnsweredAfterShutdownBeganIsHandedBack: shutdown begins while
// a claim's answer is on its way (the server claimed and committed, the
// answer waits in the socket). The claim is not abandoned: once its answer
// arrives, its tasks, which never started, go back to PENDING with no
// attempt counted. Abandoned (the claim's context ended with the
// dispatcher's), they stayed ACTIVE, owned by an instance that had
// stopped, until their lease expired and the janitor counted an attempt.
func TestClaimAnsweredAfterShutdownBeganIsHandedBack(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	b := &bundle{ctx: context.Background(), store: store.New(dbtest.PoolFor(t, url)), bus: signalbus.New()}
	gate := newReadGate()
	pool := dbtest.PoolWith(t, url, func(cfg *pgxpool.Config) {
		cfg.MaxConns = 1 // the claim uses the connection the gate holds
		cfg.ConnConfig.DialFunc = gate.dial
		// No liveness ping when the connection is taken: its answer would
		// be held, not the claim's.
		cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	})
	require.NoError(t, pool.Ping(b.ctx))

	ran := make(chan struct{}, 10)
	r := funcRunner{types: map[string]bool{"work": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		ran <- struct{}{}
		return nil, nil
	}}
	finished := &finishedRuns{c: make(chan struct{}, 10)}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Store, c.Slots, c.ClaimAhead, c.HeartbeatInterval, c.Observer = store.New(pool), 2, -1, time.Hour, finished
	})
	// A first task, there before the dispatcher starts (so its one claim
	// is the start's), is claimed, run and written: the claim statement is
	// then prepared on the pool's one connection, which is idle (the
	// outcome's write returned), so the next claim is one round trip: the
	// statement goes out, and its answer is what the gate holds.
	enqueue(t, b, "work", 1, 3)
	stop := sync.OnceFunc(runFor(d))
	t.Cleanup(func() { gate.open(); stop() }) // before the pool closes
	select {
	case <-finished.c:
	case <-time.After(90 * time.Second):
		t.Fatal("the first task never finished")
	}
	<-ran
	gate.close()
	ids := enqueue(t, b, "work", 3, 3)
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusActive) == 2 }, time.Minute, 5*time.Millisecond,
		"the claim never reached the server")

	stopped := make(chan struct{})
	go func() { defer close(stopped); stop() }()
	// A claim abandoned with the dispatcher's context gives up on its
	// answer at once (pgx sets a read deadline); one that is not never
	// does: its answer arrives when the gate opens.
	select {
	case <-gate.deadline:
	case <-time.After(5 * time.Second):
	}
	gate.open()
	select {
	case <-stopped:
	case <-time.After(90 * time.Second):
		t.Fatal("the dispatcher never stopped")
	}
	require.Empty(t, ran, "no task started after shutdown began")
	for _, id := range ids {
		tk, err := b.store.GetTask(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, wftype.StatusPending, tk.Status, "task %s", id)
		require.Zero(t, tk.Attempts, "task %s", id)
	}
}

// TestClaimAheadLostWhileWaitingFreesItsPlace: a task claimed ahead is
// cancelled while it waits for the one slot. It leaves the instance's
// queue at once, so the place it held is claimed again (another task is
// claimed ahead) while the running task still runs, instead of only once a
// slot frees.
func TestClaimAheadLostWhileWaitingFreesItsPlace(t *testing.T) {
	t.Parallel()
	ab := setupAhead(t)
	defer ab.stop()
	running := ab.waitQueued(t, 2)
	var waiting string
	require.NoError(t, ab.store.DB().QueryRow(ab.ctx,
		`SELECT task_id::text FROM tasks.tasks WHERE task_type = 'block' AND status = 'ACTIVE' AND task_id <> $1`, running).Scan(&waiting))
	_, err := ab.store.DB().Exec(ab.ctx, `UPDATE tasks.tasks SET status = 'CANCELLED', finished_at = now() WHERE task_id = $1`, waiting)
	require.NoError(t, err)
	ab.bus.Publish(signalbus.TaskStatusChanged, "CANCELLED:"+waiting)
	ids := enqueue(t, ab.bundle, "block", 1, 0)
	require.Eventually(t, func() bool {
		tk, err := ab.store.GetTask(ab.ctx, ids[0])
		require.NoError(t, err)
		return tk.Status == wftype.StatusActive
	}, time.Minute, 5*time.Millisecond, "the place of the lost task was not claimed again while the slot was busy")
	require.Equal(t, 1, ab.d.Running())
	require.Empty(t, ab.started, "only the first block task ran")
	close(ab.release)
}
