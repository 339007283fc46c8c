package redisync

import (
	"fmt"
	"time"
)

// Replication is a Client's replication policy: whether its writes wait
// for replicas to acknowledge them (WithReplication).
type Replication struct {
	replicas int
	timeout  time.Duration
}

// None: writes are acknowledged by the master alone; no WAIT is ever sent.
// The default. On a single server it is the only sensible policy.
var None = Replication{}

// WaitReplicas: every write (acquire, release, renewal) is followed by WAIT
// n timeout on the same connection, in the same pipelined batch. An
// acquisition acknowledged by fewer than n replicas within timeout is
// rolled back and Lock returns an error matching ErrNotReplicated; a renewal
// that is not acknowledged counts as failed (retried until the lease would
// run out, then the hold is lost); a release that is not acknowledged
// returns ErrNotReplicated (it did happen on the master).
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
func WaitReplicas(n int, timeout time.Duration) Replication {
	return Replication{replicas: n, timeout: timeout}
}

// WithReplication sets the Client's replication policy. Default: None.
func WithReplication(p Replication) Option {
	return func(o *options) { o.replication = p }
}

func (p Replication) validate() {
	if p.replicas < 0 || p.replicas > 0 && p.timeout < MinDuration {
		panic(fmt.Sprintf("redisync: WaitReplicas(%d, %v): want n >= 1 and a timeout of at least %v", p.replicas, p.timeout, MinDuration))
	}
}
