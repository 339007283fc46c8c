package redisync

import (
	"fmt"
	"time"
)

// replication is a Client's replication policy; the zero value sends no
// WAIT (writes are acknowledged by the master alone).
type replication struct {
	replicas int
	timeout  time.Duration
}

// WithWaitReplicas makes every write (acquire, release, renewal) be
// followed by WAIT n timeout on the same connection, in the same pipelined
// batch. An acquisition acknowledged by fewer than n replicas within
// timeout is rolled back and Lock returns an error matching
// ErrNotReplicated; a renewal that is not acknowledged counts as failed
// (retried until the lease would run out, then the hold is lost); a release
// that is not acknowledged returns ErrNotReplicated (it did happen on the
// master). New panics if n is negative, or if n >= 1 and timeout is below
// MinDuration; n = 0 sends no WAIT.
//
// WAIT narrows the window in which a failover to a replica that never saw a
// grant hands the lock out twice; it does not close it (Redis replication
// is asynchronous, and a failover may pick a replica that did not ack).
// Fencing tokens do close it, for resources that check them.
//
// On a Redis Cluster the WAIT is per shard: it goes with the scripts of
// one hash slot, on the connection to the master that serves the slot, so
// n counts that master's replicas (a renewal round spanning slots sends
// one WAIT per slot, concurrently). A write whose slot moved meanwhile
// (rueidis follows MOVED and sends it again to the new master, without
// the WAIT) is judged by the old node's WAIT: after a failover that node
// is a replica or gone and the write counts as not replicated; after a
// resharding it may be counted as replicated when it was not. So after a
// failover, writes to the shard fail with ErrNotReplicated until rueidis
// has refreshed its slot map (about a second in the tests): acquisitions
// are refused, renewals retried.
//
// Default: no WAIT; writes are acknowledged by the master alone, the only
// sensible policy on a single server.
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(o *options) { o.replication = replication{replicas: n, timeout: timeout} }
}

func (p replication) validate() {
	if p.replicas < 0 || p.replicas > 0 && p.timeout < MinDuration {
		panic(fmt.Sprintf("redisync: WithWaitReplicas(%d, %v): want n >= 1 and a timeout of at least %v", p.replicas, p.timeout, MinDuration))
	}
}
