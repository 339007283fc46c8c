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
// Fencing tokens do close it, for resources that check them. WaitReplicas
// is refused on a Cluster (New panics): there, WAIT would not reach the
// node that took the write.
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
