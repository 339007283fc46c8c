package redlock

import (
	"sync"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/scripts"
)

// node is one Redis master of a Redlock, as one Mutex sees it.
type node struct {
	e     *engine.Engine
	keys  scripts.RedlockKeys
	state *nodeState
}

// nodeState is what a Client knows about its server across every Redlock
// built on it: the server process last seen, until when the node sits out
// quorums after a restart, and whether it answers at all.
type nodeState struct {
	mu               sync.Mutex
	runID            string
	quarantinedUntil time.Time

	// inFlight counts the acquires and releases sent to the node and not
	// returned yet; heard is when it last answered one, or when inFlight
	// last rose from zero. See stalled.
	inFlight int
	heard    time.Time
}

// sent records a command sent to the node.
func (s *nodeState) sent(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight == 0 {
		s.heard = now
	}
	s.inFlight++
}

// returned records the end of a command sent to the node; answered when the
// node replied (a Redis error is a reply too), not when the client gave up
// or the connection failed.
func (s *nodeState) returned(now time.Time, answered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if answered {
		s.heard = now
	}
}

// stalled reports whether the node owes a reply for longer than d: a
// command has been in flight that long and nothing came back meanwhile (a
// blackholed or paused server). A round does not wait for such a node: its
// reply, queued behind the older ones, cannot come within the round's node
// timeout unless they are answered first, and then it is counted if it is
// in when the round stops waiting; a late grant is undone like any other.
func (s *nodeState) stalled(now time.Time, d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight > 0 && now.Sub(s.heard) > d
}

type nodeStateKey struct{}

func stateOf(e *engine.Engine) *nodeState {
	s, _ := e.Ext.LoadOrStore(nodeStateKey{}, &nodeState{})
	return s.(*nodeState)
}

// observe records the run_id a node answered with at now. A changed run_id
// means the server restarted and, without persistence, forgot its keys: it
// might grant a lock that a majority including it had granted before. The
// node then sits out quorums until quarantine has passed, when every lease
// granted before the restart has run out ("delayed restart", enforced by
// the client). It reports whether the node counts now.
func (s *nodeState) observe(runID string, now time.Time, quarantine time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if runID != "" && s.runID != "" && runID != s.runID {
		s.quarantinedUntil = now.Add(quarantine)
	}
	if runID != "" {
		s.runID = runID
	}
	return !now.Before(s.quarantinedUntil)
}
