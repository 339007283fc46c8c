package redisync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/obs"
)

// EvictionCheck says what a Client does about Redis nodes whose
// maxmemory-policy may evict lock keys (WithEvictionCheck).
//
// Under maxmemory with an allkeys-* policy Redis may evict any key, and with
// a volatile-* policy any key with an expiry — every lock key has one, so
// lock keys go first there. An evicted lock is free to the next caller while
// its holder still believes it holds it: the holder is told at its next
// renewal (Done closes, Err returns ErrLockLost), and until then only the
// fencing token protects the resource. noeviction is the policy for locks;
// it makes Redis refuse writes when memory is full, which acquisitions
// report as errors (see docs/guarantees.md).
//
// The check runs before the acquisitions of rlock, fairlock, rwlock and
// semaphore (and so of a multilock over them); Redlock and latch do not run
// it.
type EvictionCheck int

const (
	// EvictionWarn reads each node's maxmemory and maxmemory-policy at the
	// first acquisition that reaches it (CONFIG GET; again for nodes that
	// appear later, looked for at most once a minute), and reports a node
	// that may evict: once per node, at Warn through the Client's logger
	// (WithLogger) and as an EventEvictionPolicy to its Observer.
	// Acquisitions go on.
	EvictionWarn EvictionCheck = iota
	// EvictionRefuse checks and reports as EvictionWarn does, and refuses
	// every acquisition of the Client, with an error that matches
	// ErrEvictionPolicy and is an *EvictionPolicyError, while a node may
	// evict (a node found so is read again at each look, so a policy set to
	// noeviction ends the refusals within a minute). It cannot tell which
	// node a name maps to, so on a Cluster one such node refuses them all.
	EvictionRefuse
	// EvictionOff sends no CONFIG GET and reports nothing.
	EvictionOff
)

// String names the mode as its constant does, without the prefix.
func (m EvictionCheck) String() string {
	switch m {
	case EvictionWarn:
		return "warn"
	case EvictionRefuse:
		return "refuse"
	case EvictionOff:
		return "off"
	}
	return fmt.Sprintf("EvictionCheck(%d)", int(m))
}

// WithEvictionCheck sets what the Client does about nodes whose
// maxmemory-policy may evict lock keys: EvictionWarn, EvictionRefuse or
// EvictionOff (see EvictionCheck). A node is judged by maxmemory (0, no
// limit, never evicts) and maxmemory-policy (allkeys-* and volatile-* may
// evict). When CONFIG GET is denied (an ACL without +config|get, or a
// managed Redis that renames CONFIG), the Client says so once per node at
// Debug level and goes on, in every mode: nothing is known then. New panics
// on another value. Default: EvictionWarn.
func WithEvictionCheck(m EvictionCheck) Option {
	return func(o *options) { o.eviction = m }
}

// ErrEvictionPolicy is matched by the error of an acquisition that
// EvictionRefuse refused: a node's maxmemory-policy may evict lock keys.
var ErrEvictionPolicy = errors.New("redisync: maxmemory-policy may evict lock keys")

// EvictionPolicyError names the node whose maxmemory-policy may evict lock
// keys. It matches ErrEvictionPolicy.
type EvictionPolicyError struct {
	Node      string // the node's address, as rueidis names it
	Policy    string // its maxmemory-policy, e.g. "volatile-lru"
	MaxMemory string // its maxmemory in bytes (not 0)
}

func (e *EvictionPolicyError) Error() string {
	return fmt.Sprintf("redisync: node %s has maxmemory %s with maxmemory-policy %s, which may evict lock keys",
		e.Node, e.MaxMemory, e.Policy)
}

// Unwrap returns ErrEvictionPolicy.
func (e *EvictionPolicyError) Unwrap() error { return ErrEvictionPolicy }

// Timing of the eviction check.
const (
	// evictionRecheck is how often the check looks at the nodes again: new
	// ones (a failover, a Cluster grown) and those that may evict; a node
	// with noeviction (or that denies CONFIG GET) is not read again.
	evictionRecheck = time.Minute
	// evictionReadTimeout bounds one node's CONFIG GET.
	evictionReadTimeout = 2 * time.Second
)

// evictionChecker is a Client's eviction check: an engine Preflight.
type evictionChecker struct {
	mode EvictionCheck
	e    *engine.Engine
	rc   rueidis.Client // the caller's client: CONFIG needs no WAIT

	next   atomic.Int64                        // unix ns: look at the nodes again
	risky  atomic.Pointer[EvictionPolicyError] // a node that may evict, nil if none
	looked atomic.Bool                         // a look has ended: risky is a verdict

	turn  hold.OpLock             // one look at a time
	nodes map[string]*nodeVerdict // guarded by turn
}

// nodeVerdict is what the check knows of one node.
type nodeVerdict struct {
	safe     bool                 // never evicts, or CONFIG GET denied: not read again
	risk     *EvictionPolicyError // may evict: read again at every look
	reported bool                 // its risk was logged and observed
}

func newEvictionChecker(mode EvictionCheck, e *engine.Engine, rc rueidis.Client) *evictionChecker {
	return &evictionChecker{mode: mode, e: e, rc: rc, turn: hold.NewOpLock(), nodes: map[string]*nodeVerdict{}}
}

// preflight runs before each acquisition: almost always a clock read and
// two atomic loads; at the first acquisition, and then at most once a
// minute, a look at the nodes. With EvictionRefuse the acquisitions that
// arrive during the first look wait for its verdict (they would otherwise
// go on unchecked); later looks hold back nobody. A look reads with the
// caller's ctx: when ctx ends first, preflight returns ctx.Err().
func (c *evictionChecker) preflight(ctx context.Context, target obs.Target) error {
	if time.Now().UnixNano() >= c.next.Load() {
		c.look(ctx, target, c.mode == EvictionRefuse && !c.looked.Load())
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if c.mode == EvictionRefuse {
		if p := c.risky.Load(); p != nil {
			return p
		}
	}
	return nil
}

// look reads every node not known to be safe: new nodes (a failover, a
// Cluster grown) and nodes that may evict (a policy changed since). One
// caller at a time; the others go on with what is known, unless first is
// set: then they wait for the first look to end, or for ctx to (each
// node's read is bounded by evictionReadTimeout and by ctx). A look cut
// short by its caller's ctx is no verdict: the next caller looks again.
func (c *evictionChecker) look(ctx context.Context, target obs.Target, first bool) {
	if first {
		if c.turn.LockCtx(ctx) != nil {
			return
		}
		if c.looked.Load() {
			c.turn.Unlock()
			return // another caller's look ended meanwhile
		}
	} else if !c.turn.TryLock() {
		return
	}
	defer c.turn.Unlock()
	wait := evictionRecheck
	var risky *EvictionPolicyError
	for addr, node := range c.rc.Nodes() {
		v := c.nodes[addr]
		if v == nil {
			v = &nodeVerdict{}
			c.nodes[addr] = v
		}
		if !v.safe && !c.read(ctx, target, addr, node, v) {
			wait = time.Second // no answer: try again soon
		}
		if v.risk != nil && risky == nil {
			risky = v.risk
		}
	}
	if ctx.Err() != nil {
		return // cut short: the nodes not read yet are read by the next caller
	}
	c.risky.Store(risky)
	c.looked.Store(true)
	c.next.Store(time.Now().Add(wait).UnixNano())
}

// read reads one node's settings into v and reports a new risk; false when
// the node did not answer (v unchanged).
func (c *evictionChecker) read(ctx context.Context, target obs.Target, addr string, node rueidis.Client, v *nodeVerdict) bool {
	rctx, cancel := context.WithTimeout(ctx, evictionReadTimeout)
	defer cancel()
	vals, err := node.Do(rctx, node.B().ConfigGet().Parameter("maxmemory", "maxmemory-policy").Build()).AsStrMap()
	if err != nil {
		if _, answered := rueidis.IsRedisErr(err); !answered {
			return false
		}
		// NOPERM, an unknown (renamed) command: nothing to learn here.
		v.safe, v.risk = true, nil
		if l := c.e.Config.Logger; l != nil {
			l.Debug("redisync: cannot read maxmemory-policy, eviction of lock keys not checked", "node", addr, "err", err)
		}
		return true
	}
	policy, maxmem := vals["maxmemory-policy"], vals["maxmemory"]
	if !(strings.HasPrefix(policy, "allkeys-") || strings.HasPrefix(policy, "volatile-")) {
		// noeviction: never evicts, whatever maxmemory becomes.
		v.safe, v.risk = true, nil
		return true
	}
	if maxmem == "0" {
		v.risk = nil // no limit yet: read again at the next look
		return true
	}
	v.risk = &EvictionPolicyError{Node: addr, Policy: policy, MaxMemory: maxmem}
	if v.reported {
		return true
	}
	v.reported = true
	if l := c.e.Config.Logger; l != nil {
		l.Warn("redisync: maxmemory-policy may evict lock keys: a holder learns of an evicted lock only at its next renewal, after others may have taken it; use noeviction",
			"node", addr, "maxmemory", maxmem, "policy", policy, "check", c.mode.String())
	}
	c.e.Observe(obs.Event{Kind: obs.EvictionPolicy, Primitive: target.Primitive, Name: target.Name, Err: v.risk})
	return true
}
