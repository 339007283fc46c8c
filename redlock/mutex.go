package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// Mutex is a Redlock over independent Redis masters; see the package doc.
// A Mutex value is one owner; its methods are safe for concurrent use.
type Mutex struct {
	nodes       []*node
	e0          *engine.Engine // the first client: its watchdog, id, observer
	name, owner string
	nameErr     error // the name cannot be used: every method returns it
	lease       time.Duration
	leaseMs     string
	fixed       bool
	nodeTimeout time.Duration
	retryMin    time.Duration
	retryMax    time.Duration
	quarantine  time.Duration

	// afterReplies, when set (tests), runs after phase 1's replies are in
	// and before the validity is computed: a pause there must fail.
	afterReplies func()

	// op serializes attempts and releases (a channel of one token, so that
	// a Lock can stop waiting for it when ctx ends). A Client task may hold
	// it while it awaits the replies to a release the caller stopped
	// waiting for.
	op chan struct{}

	mu      sync.Mutex
	holds   int
	token   uint64
	done    chan struct{}
	err     error
	renewal *watchdog.Lease
	since   time.Time
	lost    bool   // the last hold was lost: Unlock cleans up and reports it
	members []bool // by node: the current hold's grant was fenced there
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// New returns a Redlock named name over the masters behind clients (one
// Client per independent master, no replication between them; use an odd
// number, 3 or 5). It does no I/O. A name that cannot be used (empty, too
// long, or unusable on a Cluster node) makes Lock, TryLock and Unlock return
// redisync.ErrInvalidName without I/O. New panics if there are no clients,
// a client is nil or repeated, or an option is out of range.
func New(clients []*redisync.Client, name string, opts ...Option) *Mutex {
	if len(clients) == 0 {
		panic("redlock: no clients")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m := &Mutex{name: name, op: make(chan struct{}, 1)}
	seen := map[*engine.Engine]bool{}
	longest := o.lease
	for i, c := range clients {
		if c == nil {
			panic(fmt.Sprintf("redlock: client %d is nil", i))
		}
		e := engine.FromClient(c)
		if seen[e] {
			panic(fmt.Sprintf("redlock: client %d is given twice: every node must be a different master", i))
		}
		seen[e] = true
		if err := lockopt.CheckName("redlock", e, name); err != nil && m.nameErr == nil {
			m.nameErr = err
		}
		counter, _ := keys.Derived(keys.RedlockTokenPrefix, name)
		m.nodes = append(m.nodes, &node{e: e, keys: scripts.RedlockKeys{Lock: name, Counter: counter}, state: stateOf(e)})
		longest = max(longest, e.Config.WatchdogTimeout)
	}
	m.e0 = m.nodes[0].e
	m.owner = m.e0.NewOwner()
	m.lease, m.fixed = m.e0.Config.WatchdogTimeout, false
	if o.lease > 0 {
		m.lease, m.fixed = o.lease, true
	}
	o.validate(m.lease)
	m.leaseMs = engine.Millis(m.lease)
	m.nodeTimeout = defaultNodeTimeout(m.lease)
	if o.nodeTimeoutSet {
		m.nodeTimeout = o.nodeTimeout
	}
	m.retryMin, m.retryMax = 20*time.Millisecond, 120*time.Millisecond
	if o.retrySet {
		m.retryMin, m.retryMax = o.retryMin, o.retryMax
	}
	m.quarantine = longest
	if o.quarantineSet {
		m.quarantine = o.quarantine
	}
	m.done, m.err = closedChan, redisync.ErrNotHeld
	return m
}

// Name returns the lock's name (its key on every node).
func (m *Mutex) Name() string { return m.name }

// Lock blocks until the lock is held on a quorum of nodes with time to
// spare, or ctx ends. Attempts are repeated after a random delay
// (WithRetryDelay). Locking a held Mutex nests without I/O. It returns nil;
// when ctx ends, ctx.Err() unwrapped if the lock was simply taken, or a
// *QuorumError (whose Unwrap includes ctx.Err()) if the last attempt failed
// because nodes failed; redisync.ErrClosed. Lock panics on a nil ctx.
func (m *Mutex) Lock(ctx context.Context) error {
	if ctx == nil {
		panic("redlock: nil Context")
	}
	if m.nameErr != nil {
		return m.nameErr
	}
	start := time.Now()
	var qerr *QuorumError // the last completed attempt's, nil if busy
	for attempts := 0; ; attempts++ {
		if err := ctx.Err(); err != nil {
			return withCause(qerr, err)
		}
		ok, q, err := m.attempt(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			// ctx ended during the attempt (which was not abandoned: a
			// Client task undoes its grants): report the last completed one.
			return withCause(qerr, ctx.Err())
		case err != nil:
			return err
		case ok:
			m.observeGrant(start, attempts > 0)
			return nil
		}
		qerr = q
		if ctx.Err() != nil {
			return withCause(qerr, ctx.Err())
		}
		delay := m.retryMin + rand.N(m.retryMax-m.retryMin+1)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return withCause(qerr, ctx.Err())
		case <-m.e0.Closed():
			t.Stop()
			return redisync.ErrClosed
		}
	}
}

// withCause is the error of a Lock whose ctx ended: the last attempt's
// QuorumError with the context error inside, or the bare context error when
// the lock was simply taken.
func withCause(qerr *QuorumError, cause error) error {
	if qerr == nil {
		return cause
	}
	qerr.Cause = cause
	return qerr
}

// TryLock makes exactly one attempt: (true, nil) when held, (false, nil)
// when the lock is held elsewhere, (false, *QuorumError) when nodes failed
// or the validity ran out.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if ctx == nil {
		panic("redlock: nil Context")
	}
	if m.nameErr != nil {
		return false, m.nameErr
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	start := time.Now()
	ok, qerr, err := m.attempt(ctx)
	switch {
	case err != nil:
		return false, err
	case ok:
		m.observeGrant(start, false)
		return true, nil
	case ctx.Err() != nil:
		return false, withCause(qerr, ctx.Err())
	case qerr != nil:
		return false, qerr
	}
	return false, nil
}

func (m *Mutex) observeGrant(start time.Time, waited bool) {
	m.e0.Observe(obs.Event{Kind: obs.Acquired, Primitive: "redlock", Name: m.name, Wait: time.Since(start), Waited: waited})
}

// attempt is one Redlock round: phase 1 on every node in parallel, the
// quorum and validity check, phase 2 (the fencing token) on the granting
// nodes, and on any failure a release wherever this owner may now hold the
// key. No acquire is abandoned in flight (see phase1): if ctx ends first,
// attempt returns ctx.Err() at once and a Client task undoes the grants.
func (m *Mutex) attempt(ctx context.Context) (bool, *QuorumError, error) {
	if err := m.lockOp(ctx); err != nil {
		return false, nil, err
	}
	var rest func() // replies to a release still owed when attempt returns
	defer func() { m.freeOpAfter(rest) }()
	if m.e0.IsClosed() {
		return false, nil, redisync.ErrClosed
	}
	m.mu.Lock()
	if m.holds > 0 {
		m.holds++ // re-entered: same hold, same token
		m.mu.Unlock()
		return true, nil, nil
	}
	m.mu.Unlock()

	start := time.Now()
	p := m.sendAcquires(ctx)
	if !p.collect(ctx, start.Add(m.nodeTimeout)) {
		if mutantAbandon {
			_, rest = m.release(ctx, m.allNodes(), m.releaseWait())
			return false, nil, ctx.Err()
		}
		m.settleLate(p, true)
		return false, nil, ctx.Err()
	}
	if m.afterReplies != nil {
		m.afterReplies()
	}
	now := time.Now()
	nodeErrs := make([]error, len(m.nodes))
	granted, readings := 0, []uint64{}
	for i, n := range m.nodes {
		r := p.got[i]
		switch {
		case !p.replied[i]:
			nodeErrs[i] = ErrNodeTimeout
		case r.err != nil:
			nodeErrs[i] = r.err
		case !n.state.observe(r.grant.RunID, now, m.quarantine):
			nodeErrs[i] = ErrNodeRestarted
		case !r.grant.Granted:
			nodeErrs[i] = ErrNodeBusy
		default:
			granted++
			readings = append(readings, r.grant.Value)
		}
	}
	valid := validity(m.lease, now.Sub(start))
	if granted >= quorum(len(m.nodes)) && valid > 0 {
		token := chooseToken(readings)
		fenceErrs := fanOut(ctx, m.nodes, m.nodeTimeout, func(ctx context.Context, i int, n *node) error {
			if nodeErrs[i] != nil {
				return nodeErrs[i]
			}
			ok, err := scripts.RedlockFence(ctx, n.e.RC, &n.keys, m.owner, token)
			if err == nil && !ok {
				err = ErrNodeBusy // the key expired or was taken there meanwhile
			}
			return err
		})
		fenced := 0
		members := make([]bool, len(m.nodes))
		for i, err := range fenceErrs {
			if err == nil {
				fenced++
				members[i] = true
			}
		}
		if fenced >= quorum(len(m.nodes)) {
			var err error
			valid, err = m.granted(token, start, members)
			if err != nil {
				rest = m.undo(ctx, p)
				return false, nil, err
			}
			if valid > 0 {
				m.settleLate(p, false) // late grants outside members go
				return true, nil, nil
			}
		} else {
			valid = validity(m.lease, time.Since(start))
		}
		nodeErrs = fenceErrs
		granted = fenced
	}
	// Release wherever the key may be ours: where a node granted or the
	// outcome is unknown now, and (by a Client task) where a reply is late.
	rest = m.undo(ctx, p)
	return false, outcome(nodeErrs, granted, valid), nil
}

// undo releases this owner's key on the nodes whose phase-1 reply granted
// or failed, and hands the nodes still to reply to settleLate.
func (m *Mutex) undo(ctx context.Context, p *phase1) (rest func()) {
	var idx []int
	for i, ok := range p.replied {
		if ok && p.got[i].mayHold() {
			idx = append(idx, i)
		}
	}
	if mutantAbandon {
		idx = m.allNodes()
	} else {
		m.settleLate(p, false)
	}
	if len(idx) == 0 {
		return nil
	}
	_, rest = m.release(ctx, idx, m.releaseWait())
	return rest
}

// granted records a hold fenced on members and confirmed at start
// (validity counts from there), unless its validity has already run out by
// now: a grant that cannot be relied on any more is never reported. It
// returns the validity left.
func (m *Mutex) granted(token uint64, start time.Time, members []bool) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	valid := validity(m.lease, time.Since(start))
	if valid <= 0 {
		return valid, nil
	}
	l := &watchdog.Lease{TTL: m.lease, Fixed: m.fixed, Target: m}
	if !m.fixed {
		l.Renewer = renewerOf
	}
	l.OnLost = func(err error) {
		reason := redisync.ErrLockLost
		if !errors.Is(err, watchdog.ErrLost) {
			reason = err // the first Client was closed
		}
		m.end(l, reason, true)
	}
	if err := m.e0.Watchdog.Add(l, start); err != nil {
		return valid, redisync.ErrClosed
	}
	m.holds, m.token, m.err, m.lost, m.renewal, m.since = 1, token, nil, false, l, start
	m.members = members
	m.done = make(chan struct{})
	return valid, nil
}

// Unlock releases one hold; the last one deletes the lock on every node.
//
// The hold ends locally at once — renewal stops and Done closes — and the
// release is sent to every node whatever ctx says: ctx (and the release
// wait, the node timeout but at least 100 ms) bounds only how long Unlock
// waits for the replies; a Client task awaits the rest, and the handle's
// next Lock waits for it (at most engine.CompensateTimeout), so a late
// release never meets a new hold.
//
// It returns redisync.ErrNotHeld when the handle holds nothing, an error
// matching redisync.ErrLockLost when the hold was lost (what is left is
// removed), and a *QuorumError with Op OpRelease when no node confirmed the
// release (its Unwrap includes ctx.Err() when ctx ended first; keys that
// were not released expire within the lease). Unlock panics on a nil ctx.
func (m *Mutex) Unlock(ctx context.Context) error {
	if ctx == nil {
		panic("redlock: nil Context")
	}
	if m.nameErr != nil {
		return m.nameErr
	}
	// Not bounded by ctx: whatever holds op finishes within a bound, and
	// the release must be sent.
	m.op <- struct{}{}
	var rest func()
	defer func() { m.freeOpAfter(rest) }()
	m.mu.Lock()
	holds, lost, renewal := m.holds, m.lost, m.renewal
	m.mu.Unlock()
	switch {
	case holds == 0 && lost:
		var err error
		rest, err = m.cleanUpLost(ctx)
		return err
	case holds == 0:
		return redisync.ErrNotHeld
	case holds > 1:
		m.mu.Lock()
		m.holds--
		m.mu.Unlock()
		return nil
	}
	if !m.e0.Watchdog.Remove(renewal) {
		// Lost while we were getting here: OnLost may not have run yet.
		// End the hold now (OnLost then finds it ended) and clean up here,
		// still holding op.
		m.end(renewal, hold.LostReason(m.e0), true)
		if mutantUnlockDeadlock {
			return m.Unlock(ctx)
		}
		var err error
		rest, err = m.cleanUpLost(ctx)
		return err
	}
	m.end(renewal, redisync.ErrNotHeld, false)
	var errs []error
	errs, rest = m.release(ctx, m.allNodes(), m.releaseWait())
	confirmed := 0
	for _, err := range errs {
		if err == nil {
			confirmed++
		}
	}
	if confirmed == 0 {
		return &QuorumError{Op: OpRelease, Required: quorum(len(m.nodes)), Nodes: errs, Cause: ctx.Err()}
	}
	return nil
}

// cleanUpLost removes whatever is left of a lost hold and reports the loss.
func (m *Mutex) cleanUpLost(ctx context.Context) (rest func(), err error) {
	_, rest = m.release(ctx, m.allNodes(), m.releaseWait())
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lost = false
	return rest, m.err
}

// end ends hold l (if current) for reason.
func (m *Mutex) end(l *watchdog.Lease, reason error, lost bool) {
	m.mu.Lock()
	if m.renewal != l || l == nil {
		m.mu.Unlock()
		return
	}
	m.renewal, m.holds, m.token, m.err, m.lost, m.members = nil, 0, 0, reason, lost, nil
	close(m.done)
	held := time.Since(m.since)
	m.mu.Unlock()
	m.e0.Observe(hold.Ended(obs.Target{Primitive: "redlock", Name: m.name}, held, reason))
}

// Token returns the fencing token of the current hold, 0 if none: above
// every token of an earlier grant of the name on these nodes (see the
// package doc for the argument and its assumptions).
func (m *Mutex) Token() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Done returns a channel that is closed when the current hold ends.
func (m *Mutex) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done
}

// Err returns nil while held, an error matching redisync.ErrLockLost after
// a loss, and redisync.ErrNotHeld otherwise.
func (m *Mutex) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// fanOut runs f on every node in parallel, each bounded by timeout, and
// waits for all of them (stragglers are cancelled, then awaited; their
// error is ErrNodeTimeout). Only for commands that may be abandoned in
// flight (fence, renew): never for an acquire or a release.
func fanOut(ctx context.Context, nodes []*node, timeout time.Duration, f func(ctx context.Context, i int, n *node) error) []error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = f(nctx, i, n)
			if errs[i] != nil && ctx.Err() == nil && nctx.Err() != nil {
				// The node timeout, not the caller's ctx: say so, so that a
				// live ctx never sees context.DeadlineExceeded.
				errs[i] = ErrNodeTimeout
			}
		}()
	}
	wg.Wait()
	return errs
}
