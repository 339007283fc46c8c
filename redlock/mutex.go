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

	op sync.Mutex // serializes attempts and releases

	mu      sync.Mutex
	holds   int
	token   uint64
	done    chan struct{}
	err     error
	renewal *watchdog.Lease
	since   time.Time
	lost    bool // the last hold was lost: Unlock cleans up and reports it
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
	m := &Mutex{name: name}
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
	m.nodeTimeout = min(m.lease/20, 250*time.Millisecond)
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
	for attempts := 0; ; attempts++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, qerr, err := m.attempt(ctx)
		switch {
		case err != nil:
			return err
		case ok:
			m.observeGrant(start, attempts > 0)
			return nil
		case ctx.Err() != nil:
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
// nodes, and on any failure a release on every node.
func (m *Mutex) attempt(ctx context.Context) (bool, *QuorumError, error) {
	m.op.Lock()
	defer m.op.Unlock()
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
	grants := make([]scripts.RedlockGrant, len(m.nodes))
	nodeErrs := fanOut(ctx, m.nodes, m.nodeTimeout, func(ctx context.Context, i int, n *node) error {
		var err error
		grants[i], err = scripts.RedlockAcquire(ctx, n.e.RC, &n.keys, m.owner, m.leaseMs)
		return err
	})
	if m.afterReplies != nil {
		m.afterReplies()
	}
	now := time.Now()
	granted, readings := 0, []uint64{}
	for i, n := range m.nodes {
		if nodeErrs[i] != nil {
			continue
		}
		switch {
		case !n.state.observe(grants[i].RunID, now, m.quarantine):
			nodeErrs[i] = ErrNodeRestarted
		case !grants[i].Granted:
			nodeErrs[i] = ErrNodeBusy
		default:
			granted++
			readings = append(readings, grants[i].Value)
		}
	}
	valid := validity(m.lease, now.Sub(start))
	if granted >= quorum(len(m.nodes)) && valid > 0 {
		token := chooseToken(readings)
		fenced := 0
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
		for _, err := range fenceErrs {
			if err == nil {
				fenced++
			}
		}
		valid = validity(m.lease, time.Since(start))
		if fenced >= quorum(len(m.nodes)) && valid > 0 {
			if err := m.granted(token, start); err != nil {
				m.releaseAll(ctx)
				return false, nil, err
			}
			return true, nil, nil
		}
		nodeErrs = fenceErrs
		granted = fenced
	}
	// Release everywhere, also where the answer was lost or late: a node
	// may have granted without us seeing it.
	m.releaseAll(ctx)
	return false, outcome(nodeErrs, granted, valid), nil
}

// granted records a hold confirmed at start (validity counts from there).
func (m *Mutex) granted(token uint64, start time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
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
		return redisync.ErrClosed
	}
	m.holds, m.token, m.err, m.lost, m.renewal, m.since = 1, token, nil, false, l, start
	m.done = make(chan struct{})
	return nil
}

// Unlock releases one hold; the last one deletes the lock on every node.
// It returns redisync.ErrNotHeld when the handle holds nothing, an error
// matching redisync.ErrLockLost when the hold was lost (what is left is
// removed), and a *QuorumError when no node could be reached (the keys
// then expire within the lease). Unlock panics on a nil ctx.
func (m *Mutex) Unlock(ctx context.Context) error {
	if ctx == nil {
		panic("redlock: nil Context")
	}
	if m.nameErr != nil {
		return m.nameErr
	}
	m.op.Lock()
	defer m.op.Unlock()
	m.mu.Lock()
	holds, lost, renewal := m.holds, m.lost, m.renewal
	m.mu.Unlock()
	switch {
	case holds == 0 && lost:
		m.releaseAll(ctx)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.lost = false
		return m.err
	case holds == 0:
		return redisync.ErrNotHeld
	case holds > 1:
		m.mu.Lock()
		m.holds--
		m.mu.Unlock()
		return nil
	}
	if !m.e0.Watchdog.Remove(renewal) {
		m.end(renewal, hold.LostReason(m.e0), true)
		return m.Unlock(ctx)
	}
	errs := m.releaseAll(ctx)
	m.end(renewal, redisync.ErrNotHeld, false)
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed == len(m.nodes) {
		return &QuorumError{Required: quorum(len(m.nodes)), Nodes: errs}
	}
	return nil
}

// releaseAll deletes this owner's lock on every node in parallel, also
// after ctx ended; it returns each node's error.
func (m *Mutex) releaseAll(ctx context.Context) []error {
	bctx, cancel := engine.Background(ctx)
	defer cancel()
	return fanOut(bctx, m.nodes, max(m.nodeTimeout, 100*time.Millisecond), func(ctx context.Context, _ int, n *node) error {
		_, err := scripts.RedlockRelease(ctx, n.e.RC, &n.keys, m.owner)
		return err
	})
}

// end ends hold l (if current) for reason.
func (m *Mutex) end(l *watchdog.Lease, reason error, lost bool) {
	m.mu.Lock()
	if m.renewal != l || l == nil {
		m.mu.Unlock()
		return
	}
	m.renewal, m.holds, m.token, m.err, m.lost = nil, 0, 0, reason, lost
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
// waits for all of them (stragglers are cancelled, then awaited).
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
		}()
	}
	wg.Wait()
	return errs
}
