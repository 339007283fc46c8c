package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
)

// Mutex is a Redlock over independent Redis masters; see the package doc.
// Goroutines that share a Mutex exclude each other as they would around a
// sync.Mutex, unless it was made with WithReentrant (see the package doc's
// Ownership section). All methods are safe for concurrent use.
type Mutex struct {
	nodes       nodeSet
	e0          *engine.Engine // the first client: its watchdog, id, observer
	name, owner string
	nameErr     error // the name or the lease cannot be used: every method returns it
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
	// duringCollect, when set (tests), runs once phase 1's node wait has
	// begun (a client stalled there must not fail the nodes).
	duringCollect func()

	gate *hold.Gate // nil for a reentrant handle
	// hold is the handle's hold: count, token, Done, Err, renewal and the
	// queue of releases (internal/hold). Its acquire is the quorum round,
	// its release the release on every node. Its op lock serializes the
	// handle's traffic to the nodes, rounds and releases: it is held only
	// while the caller waits, since replies that come later are awaited by
	// Client tasks that can only act on their own round's key value (see
	// rounds).
	hold *hold.Hold

	// rounds numbers the handle's phase-1 rounds. Each round's key value is
	// its own, owner:round, so the late acquire or late release of one round
	// can never touch another round's key: the next attempt does not wait
	// for them.
	rounds atomic.Uint64

	mu    sync.Mutex
	value string // the key value of the round that won the current (or last) hold
}

// New returns a Redlock named name over the masters behind clients (one
// Client per independent master, no replication between them; use an odd
// number, 3 or 5). It does no I/O. A name that cannot be used (empty, too
// long, or unusable on a Cluster node) makes Lock, TryLock and Unlock return
// redisync.ErrInvalidName without I/O, and a WithLease below
// redisync.MinLease redisync.ErrInvalidLease. New panics if there are no
// clients, a client is nil or repeated, or another option is out of range.
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
		info, holder := e.HolderInfo(name)
		m.nodes = append(m.nodes, &node{e: e, keys: scripts.RedlockKeys{Lock: name, Counter: counter, Info: info, Holder: holder}, state: stateOf(e)})
		longest = max(longest, e.Config.WatchdogTimeout)
	}
	m.e0 = m.nodes[0].e
	m.owner = m.e0.NewOwner()
	m.lease, m.fixed = m.e0.Config.WatchdogTimeout, false
	var leaseErr error
	if o.leaseSet {
		m.lease, m.fixed = max(o.lease, lockopt.MinLease), true
		leaseErr = lockopt.LeaseErr("redlock", name, o.lease) // configuration: an error, not a panic
		if m.nameErr == nil {
			m.nameErr = leaseErr
		}
	}
	o.validate(m.lease, leaseErr == nil)
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
	if !o.reentrant {
		m.gate = hold.NewGate(o.nonReentrant, m.e0.Closed()) // WithNonReentrant: refuse, do not wait
	}
	m.hold = hold.New(hold.Config{
		Engine:      m.e0,
		Lease:       m.lease,
		Fixed:       m.fixed,
		LocalCount:  true, // the nodes keep no count: re-entry is local
		Release:     m.releaseHold,
		Renewer:     renewerOf,
		RenewTarget: func(uint64) any { return m.renewTarget() },
		Observed:    obs.Target{Primitive: "redlock", Name: name},
		OutlivesCtx: true, // a release does not wait for a stalled node's reply
	})
	return m
}

// A multilock learns a Mutex's refusal before its first round.
func init() {
	lockopt.RegisterRefusal(func(l any) (error, bool) {
		m, ok := l.(*Mutex)
		if !ok {
			return nil, false
		}
		return m.nameErr, true
	})
}

// Name returns the lock's name (its key on every node).
func (m *Mutex) Name() string { return m.name }

// Lock blocks until the lock is held on a quorum of nodes with time to
// spare, or ctx ends. Attempts are repeated after a random delay
// (WithRetryDelay). On a Mutex that is already held it waits for that
// hold's Unlock, as sync.Mutex.Lock does; with WithReentrant it nests
// without I/O (each Lock needs its own Unlock). Node errors that may pass
// (a connection refused or reset, a node timeout or restart, a server
// loading) are retried; it returns nil; when ctx ends, ctx.Err() unwrapped
// if the lock was simply taken, or a *QuorumError (whose Unwrap includes
// ctx.Err()) if the last attempt failed because nodes failed; at once, a
// *QuorumError when so many nodes answered with a permanent error (a key of
// another kind, an ACL's NOPERM, OOM: errors no retry changes) that no
// quorum is possible; redisync.ErrClosed. Lock panics on a nil ctx.
func (m *Mutex) Lock(ctx context.Context) error {
	if ctx == nil {
		panic("redlock: nil Context")
	}
	if m.nameErr != nil {
		return m.nameErr
	}
	if err := m.gate.Enter(ctx); err != nil {
		return err
	}
	err := m.lock(ctx)
	m.gate.Acquired(err == nil)
	return err
}

func (m *Mutex) lock(ctx context.Context) error {
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
		case errors.As(err, &q) && q.Op == OpRelease:
			// The release of this handle's last hold is still owed (no
			// node answered it): it is sent again before the next round.
		case err != nil:
			return err
		case ok:
			m.observeGrant(start, attempts > 0)
			return nil
		case q != nil && q.permanent():
			return q // no later round can reach a quorum
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
	if ok, err := m.gate.TryEnter(); !ok {
		return false, err
	}
	ok, err := m.tryLock(ctx)
	m.gate.Acquired(ok && err == nil)
	return ok, err
}

func (m *Mutex) tryLock(ctx context.Context) (bool, error) {
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

// attempt is one acquisition of the handle's hold: the hold (internal/hold)
// sends the releases it still owes, nests a reentrant handle without I/O,
// and records the grant of a quorum round (or gives it back when the caller
// has gone). A *QuorumError says why a round did not grant.
func (m *Mutex) attempt(ctx context.Context) (bool, *QuorumError, error) {
	var qerr *QuorumError
	ok, err := m.hold.AttemptOwn(ctx, func(ctx context.Context) (scripts.Acquired, time.Time, error) {
		start := time.Now()
		token, q, err := m.round(ctx, start)
		qerr = q
		return scripts.Acquired{OK: token != 0, Token: token, Count: 1}, start, err
	})
	return ok, qerr, err
}

// round is one Redlock round: phase 1 on every node in parallel, the
// quorum and validity check, phase 2 (the fencing token) on the granting
// nodes, and on any failure a release wherever this round may now hold the
// key. It returns the token of a grant, or 0 and why not. No acquire is
// abandoned in flight (see phase1): if ctx ends first, round returns
// ctx.Err() at once and a Client task undoes the grants. The round's key
// value is its own (see rounds), so replies still owed when it returns are
// awaited by Client tasks and the handle's next round goes out at once.
func (m *Mutex) round(ctx context.Context, start time.Time) (uint64, *QuorumError, error) {
	value := m.owner + ":" + strconv.FormatUint(m.rounds.Add(1), 10)

	p := m.sendAcquires(ctx, value)
	// The node timeout starts once the acquires are on their way, not at
	// the round's start: the time a round waited for the handle's previous
	// operation is not the nodes' (it counts against the validity, which
	// is measured from the start). The wait leaves at least half the lease
	// as validity, however long the process stalls in it.
	if !p.wait(ctx, m.nodeTimeout, m.lease/2-time.Since(start), m.duringCollect) {
		m.settleLate(p, value, true)
		return 0, nil, ctx.Err()
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
		case !n.state.observe(r.v.RunID, now, m.quarantine):
			nodeErrs[i] = ErrNodeRestarted
		case !r.v.Granted:
			nodeErrs[i] = ErrNodeBusy
		default:
			granted++
			readings = append(readings, r.v.Value)
		}
	}
	valid := validity(m.lease, now.Sub(start))
	if granted >= quorum(len(m.nodes)) && valid > 0 {
		token := chooseToken(readings)
		var granting []int
		for i, err := range nodeErrs {
			if err == nil {
				granting = append(granting, i)
			}
		}
		// The fence may be abandoned in flight: it only raises the
		// counter, and a node it did not reach in time is not in the hold.
		f := sendCut(ctx, m.nodes, granting, func(ctx context.Context, n *node) (bool, error) {
			ok, err := scripts.RedlockFence(ctx, n.e.RC, &n.keys, value, token)
			if err == nil && !ok {
				err = ErrNodeBusy // the key expired or was taken there meanwhile
			}
			return ok, err
		})
		f.wait(ctx, m.nodeTimeout, valid, nil)
		f.cut(ctx)
		fenceErrs := f.errs(nil)
		fenced := 0
		for i, err := range nodeErrs {
			if err != nil {
				fenceErrs[i] = err
			} else if fenceErrs[i] == nil {
				fenced++
			}
		}
		// A grant that cannot be relied on any more is never reported.
		valid = validity(m.lease, time.Since(start))
		if fenced >= quorum(len(m.nodes)) && valid > 0 {
			// The hold's renewals and release use this round's value.
			m.mu.Lock()
			m.value = value
			m.mu.Unlock()
			// Late grants go: those nodes were not fenced, so they are
			// not part of the hold.
			m.settleLate(p, value, false)
			return token, nil, nil
		}
		nodeErrs = fenceErrs
		granted = fenced
	}
	// Release wherever the key may be this round's: where a node granted or
	// the outcome is unknown now, and (by a Client task) where a reply is
	// late.
	m.undo(ctx, p, value)
	q := outcome(nodeErrs, granted, valid)
	if q != nil {
		q.Name = m.name
	}
	return 0, q, nil
}

// undo releases the round's key (value) on the nodes whose phase-1 reply
// granted or failed, and hands the nodes still to reply to settleLate.
func (m *Mutex) undo(ctx context.Context, p *phase1, value string) {
	var idx []int
	for i, ok := range p.replied {
		if ok && mayHold(p.got[i]) {
			idx = append(idx, i)
		}
	}
	m.settleLate(p, value, false)
	if len(idx) == 0 {
		return
	}
	_, rest := m.release(ctx, idx, value, m.releaseWait())
	m.awaitLate(rest)
}

// Unlock releases one hold; the last one deletes the lock on every node.
//
// The hold ends locally at once — renewal stops and Done closes — and the
// release is sent to every node whatever ctx says: ctx (and the release
// wait, the node timeout but at least 100 ms) bounds only how long Unlock
// waits for the replies; a Client task awaits the rest. The handle's next
// Lock does not wait for them: the release names the key value of the
// round that won this hold, and every round has its own, so a late release
// never meets a new hold. When ctx is done first Unlock returns ctx.Err()
// and the release completes in the background.
//
// It returns redisync.ErrNotHeld when the handle holds nothing, an error
// matching redisync.ErrLockLost when the hold was lost (what is left is
// removed), and a *QuorumError with Op OpRelease when no node confirmed the
// release (keys that were not released expire within the lease): the
// release then stays queued and is sent again before the handle's next
// round, and calling Unlock again sends it again. Unlock panics on a nil
// ctx.
func (m *Mutex) Unlock(ctx context.Context) error {
	if ctx == nil {
		panic("redlock: nil Context")
	}
	if m.nameErr != nil {
		return m.nameErr
	}
	// Whatever the release reports, the hold has ended here: let the next
	// goroutine sharing the handle in.
	defer m.gate.Exit()
	return m.hold.Unlock(ctx)
}

// releaseHold is the hold's release (or the give-back of a grant the caller
// no longer wants): the key of the round that won it goes from every node.
// It succeeds when a node confirmed it (the others' keys expire within the
// lease); when none did, it returns a *QuorumError and the hold keeps the
// release queued. The hold's queued releases are sent before the handle's
// next round, so the value is still the hold's when one is re-sent. The
// handle's hold knows no count in Redis, so a release that lands twice is
// harmless: it deletes only that round's key.
func (m *Mutex) releaseHold(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error) {
	if a.Expected == scripts.ReleaseAny {
		// Not a hold of this handle's (it never held). The owner is drawn
		// for this handle alone, and every round that did not become a
		// hold is undone by its own task: no node has a key of this
		// handle's to release, and such an Unlock is ErrNotHeld.
		return scripts.Released{}, nil
	}
	errs, rest := m.releaseKeys(ctx, m.nodes.all(), m.holdValue(), m.releaseWait(), !a.Unrecorded)
	m.awaitLate(rest)
	for _, err := range errs {
		if err == nil {
			return scripts.Released{Acted: true}, nil
		}
	}
	return scripts.Released{}, &QuorumError{Name: m.name, Op: OpRelease, Required: quorum(len(m.nodes)), Nodes: errs, Cause: ctx.Err()}
}

// holdValue is the key value of the round that won the hold.
func (m *Mutex) holdValue() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.value
}

// Token returns the fencing token of the current hold, 0 if none: above
// every token of an earlier grant of the name on these nodes (see the
// package doc for the argument and its assumptions).
func (m *Mutex) Token() uint64 { return m.hold.Token() }

// Done returns a channel that is closed when the current hold ends.
func (m *Mutex) Done() <-chan struct{} { return m.hold.Done() }

// Err returns nil while held, an error matching redisync.ErrLockLost after
// a loss, and redisync.ErrNotHeld otherwise.
func (m *Mutex) Err() error { return m.hold.Err() }
