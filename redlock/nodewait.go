package redlock

import "time"

// nodeWait is a node timeout that counts only the time this process could
// have read a reply in: a wait on nodes (phase 1, the fence, a release)
// ends when d of it has passed with the process running, or at limit.
//
// Why: replies are read by this process. When the whole process stalls —
// a loaded machine keeps it off the CPU, a long GC pause, SIGSTOP — every
// node's reply waits in its socket unread, and a plain timer that expires
// meanwhile fires first on resume: every node "did not answer in time" at
// once, and a healthy quorum reads as a failed one (beside a second make
// test this failed 5-node rounds with a 100 ms node timeout). A process
// stall is not a node failure, so it is not charged to the nodes. The wait
// is cut into slices; a slice whose timer fires late shows the process was
// stalled for the lateness, and the deadline moves out by that much, and
// always by at least one more slice: the wait ends only after a slice in
// which the process ran and could read what had arrived.
//
// Safety does not rest on this: a grant's validity is still lease −
// (now − start) − drift by the monotonic clock, stall included (a stall
// that spends the validity fails the round, TestClientPausedBeforeReading
// RepliesFails), and limit caps how far a run of stalls can push the wait.
// A dead node still costs at most d of running time, plus the stalls.
type nodeWait struct {
	deadline time.Time // moves out by the stalls measured
	limit    time.Time // the wait never goes past this
	slice    time.Duration
	due      time.Time // when the timer should fire
	timer    *time.Timer
}

const (
	// nodeWaitSlices is how many slices a node timeout is cut into: a stall
	// is measured to within a slice, at the cost of that many wake-ups
	// while nodes are slow (none while they answer at once).
	nodeWaitSlices = 8
	// stallTolerance is timer lateness that is not a stall: an idle
	// machine fires timers within a fraction of it.
	stallTolerance = 2 * time.Millisecond
)

// newNodeWait starts a wait of d running time, ending at limit (from now)
// at the latest.
func newNodeWait(d, limit time.Duration) *nodeWait {
	now := time.Now()
	w := &nodeWait{
		deadline: now.Add(d),
		limit:    now.Add(max(limit, d)),
		slice:    max(d/nodeWaitSlices, time.Millisecond),
	}
	w.due = earliest(now.Add(w.slice), w.deadline)
	w.timer = time.NewTimer(w.due.Sub(now))
	return w
}

// C is the channel to select on; after each fire call expired.
func (w *nodeWait) C() <-chan time.Time { return w.timer.C }

// expired is called when C fired: it reports whether the wait is over, and
// otherwise re-arms the timer for the next slice.
func (w *nodeWait) expired() bool {
	now := time.Now()
	if late := now.Sub(w.due); late > stallTolerance {
		// The process was stalled for about late: not the nodes' time.
		// After a stall, one more slice of running time at least, so that
		// replies that came in meanwhile are read before the wait ends.
		w.deadline = latest(w.deadline.Add(late), now.Add(w.slice))
	}
	w.deadline = earliest(w.deadline, w.limit)
	if !now.Before(w.deadline) {
		return true
	}
	w.due = earliest(now.Add(w.slice), w.deadline)
	w.timer.Reset(w.due.Sub(now))
	return false
}

// stop releases the timer.
func (w *nodeWait) stop() { w.timer.Stop() }

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
