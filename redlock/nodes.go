package redlock

import (
	"sync"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/scripts"
)

// node is one Redis master of a Redlock, as one Mutex sees it.
type node struct {
	e     *engine.Engine
	keys  scripts.RedlockKeys
	state *nodeState
}

// nodeState is what a Client knows about its server across every Redlock
// built on it: the server process last seen, and until when the node sits
// out quorums after a restart.
type nodeState struct {
	mu               sync.Mutex
	runID            string
	quarantinedUntil time.Time
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
