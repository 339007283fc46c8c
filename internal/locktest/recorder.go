package locktest

import (
	"sync"

	"github.com/redisync/redisync"
)

// Recorder is a redisync.Observer that keeps every event, for tests that
// count what a Client reported.
type Recorder struct {
	mu     sync.Mutex
	events []redisync.Event
}

// Observe records ev.
func (r *Recorder) Observe(ev redisync.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// Events returns a copy of the events recorded so far.
func (r *Recorder) Events() []redisync.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]redisync.Event(nil), r.events...)
}

// Count is how many recorded events are of kind, for primitive, and match
// pred (nil: every one).
func (r *Recorder) Count(kind redisync.EventKind, primitive string, pred func(redisync.Event) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Kind == kind && ev.Primitive == primitive && (pred == nil || pred(ev)) {
			n++
		}
	}
	return n
}
