// Package signalbus is the in-process bus that wakes wf's services. The
// leader feeds it from PostgreSQL notifications and followers from their poll
// timer, so the dispatcher and the event consumer behave the same whatever
// the instance's role.
package signalbus

import "sync"

// Topics published on the bus.
const (
	// TaskQueued: a task became due (payload: its task type, or "" for a sweep).
	TaskQueued = "task_queued"
	// TaskStatusChanged: a task changed status outside its runner (payload
	// "CANCELLED:<task id>").
	TaskStatusChanged = "task_status_changed"
	// EventQueued: an event was written to the outbox.
	EventQueued = "event_queued"
)

// Bus delivers payloads to the subscribers of a topic. Subscribers are called
// on the publisher's goroutine and must not block.
type Bus struct {
	mu     sync.RWMutex
	nextID int
	subs   map[string]map[int]func(payload string)
}

// New returns an empty bus.
func New() *Bus { return &Bus{subs: map[string]map[int]func(string){}} }

// Subscribe calls fn for every payload published on topic until the returned
// function is called.
func (b *Bus) Subscribe(topic string, fn func(payload string)) (unsubscribe func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextID++
	id := b.nextID
	if b.subs[topic] == nil {
		b.subs[topic] = map[int]func(string){}
	}
	b.subs[topic][id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs[topic], id)
	}
}

// Publish hands payload to every subscriber of topic.
func (b *Bus) Publish(topic, payload string) {
	b.mu.RLock()
	fns := make([]func(string), 0, len(b.subs[topic]))
	for _, fn := range b.subs[topic] {
		fns = append(fns, fn)
	}
	b.mu.RUnlock()
	for _, fn := range fns {
		fn(payload)
	}
}

// Waker turns bus signals into a coalescing wake-up channel: any number of
// signals before the receiver looks make one wake-up.
type Waker struct{ c chan struct{} }

// NewWaker returns a waker with nothing pending.
func NewWaker() *Waker { return &Waker{c: make(chan struct{}, 1)} }

// Wake records a wake-up without blocking.
func (w *Waker) Wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// C is the channel that receives one value per coalesced wake-up.
func (w *Waker) C() <-chan struct{} { return w.c }
