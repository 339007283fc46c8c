package multilock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	ierrs "github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
)

// Named is what a component may offer for the canonical order: its lock's
// name. Every redisync lock (rlock, fairlock, rwlock and both its sides,
// redlock, a semaphore's Locker, a multilock) has it. A component without
// it is accepted too (see New).
type Named interface {
	Name() string
}

// ErrSameLock is returned by Lock and TryLock, without I/O, of a multilock
// two of whose locks (however deeply nested) have the same name: an
// RWMutex and its WriteLocker, two handles of one name (a transfer from
// account 17 to account 17), two Lockers of one semaphore. A round would
// wait for itself until ctx ends (or take one semaphore's permits twice).
// The error names the lock; lock one handle instead. Components without a
// Name method are not compared.
var ErrSameLock = errors.New("multilock: two components are the same lock")

// nameOf is a component's name for the canonical order and for messages:
// its Name, or its type and place among New's arguments when it has none.
func nameOf(l redisync.Locker, i int) (name string, named bool) {
	if n, ok := l.(Named); ok {
		return n.Name(), true
	}
	return fmt.Sprintf("component %d (%T)", i, l), false
}

// Backoff bounds between rounds of Lock: the wait before round k+1 is drawn
// uniformly from [0, min(MaxBackoff, MinBackoff·2^k)) ("full jitter"), and
// never longer than the busy lock's remaining lease when that is known.
const (
	MinBackoff = 2 * time.Millisecond
	MaxBackoff = 250 * time.Millisecond
)

// Mutex holds several locks together, all or none. It is itself a
// redisync.Locker, so it may be a component of another multilock.
// Goroutines that share a Mutex exclude each other as they would around a
// sync.Mutex, unless it was made with NewReentrant (see the package doc's
// Ownership section). All methods are safe for concurrent use.
type Mutex struct {
	parts []redisync.Locker // canonical order
	names []string          // parts' names (nameOf), same order
	// sameErr, when set, is the ErrSameLock that Lock and TryLock return.
	sameErr error
	// refused, when set, is the first component's (canonical order)
	// refusal: the error every method of that component returns without
	// I/O — its name, owner id, lease or count cannot be used
	// (lockopt.Refusal). Lock, TryLock, Unlock and the inspection methods
	// return it before any I/O.
	refused error

	// gate is the local wait in front of the rounds (nil: NewReentrant),
	// the same one every lock handle has (internal/hold). A multilock has
	// no Client of its own: closed, which ends waits at the gate with
	// ErrClosed, is closed when the loss watcher finds a component lost to
	// its Client's Close.
	gate      *hold.Gate
	closed    chan struct{}
	closeOnce sync.Once

	// members is set when every part is an rlock on one Client whose keys
	// can share a script (one server, or one hash slot on a Cluster): each
	// round is then a single script.
	members []*hold.Member

	// op serializes rounds and releases; every wait for it is bounded by
	// the caller's ctx (a round may be waiting on a server that does not
	// answer). It is given back with unlockOp.
	op hold.OpLock

	mu      sync.Mutex
	holds   int // this multilock's holds: rounds granted minus Unlocks
	done    chan struct{}
	err     error
	stop    chan struct{} // ends the loss watcher
	watched chan struct{} // closed when the loss watcher has exited
	// owed lists the components whose release failed (in the order to
	// retry, reverse canonical): the next Unlock retries them first, and so
	// does the next round of Lock, before it takes them again. Written
	// under op and mu.
	owed []redisync.Locker
	// handed lists the releases of Unlocks whose ctx ended while they
	// waited for op (in the order to send): whoever holds op sends them
	// before giving it back (unlockOp).
	handed []redisync.Locker
}

// New returns a lock over the given components. It does no I/O.
//
// The components may be any redisync.Locker values: locks of every kind, a
// semaphore's Locker, other multilocks (which nest: see the package doc), or
// a Locker of the caller's own. They are put in one canonical order — by
// name (a Name() string method, which every redisync lock has), in the
// caller's order among equal names, and components without a Name after
// the named ones in the caller's order — and every round acquires them in
// that order, so two multilocks over the same locks passed in different
// orders do not hinder each other. (A round never waits while it holds a
// component, so no order can deadlock; the canonical one spares rounds that
// would fail.) New panics if no component is given, one is nil, or the
// same component is passed twice, also inside a nested multilock: a round
// would then wait for itself.
//
// A Lock on a Mutex that is already held waits for its Unlock, as
// sync.Mutex.Lock does; NewReentrant makes one whose Locks nest.
func New(lockers ...redisync.Locker) *Mutex {
	m := newMutex(lockers)
	m.closed = make(chan struct{})
	m.gate = hold.NewGate(false, m.closed)
	return m
}

// NewReentrant is New for a multilock whose every Lock nests: each Lock
// locks every component once more (so the components must nest too: make
// them with WithReentrant or WithOwner) and needs its own Unlock.
// Goroutines that share it do not exclude each other.
func NewReentrant(lockers ...redisync.Locker) *Mutex { return newMutex(lockers) }

func newMutex(lockers []redisync.Locker) *Mutex {
	if len(lockers) == 0 {
		panic("multilock: no components")
	}
	type entry struct {
		l     redisync.Locker
		name  string
		named bool
	}
	entries := make([]entry, len(lockers))
	seen := map[any]int{} // every lock inside, nested multilocks flattened
	named := map[string]int{}
	var sameErr error
	for i, l := range lockers {
		if isNil(l) {
			panic(fmt.Sprintf("multilock: component %d is nil", i))
		}
		for _, leaf := range leaves(l) {
			if isComparable(leaf) {
				if j, dup := seen[leaf]; dup {
					panic(fmt.Sprintf("multilock: components %d and %d are or contain the same lock", j, i))
				}
				seen[leaf] = i
			}
			if n, ok := leaf.(Named); ok {
				if j, dup := named[n.Name()]; dup && sameErr == nil {
					sameErr = fmt.Errorf("multilock: components %d and %d are or contain the same lock %q: %w", j, i, n.Name(), ErrSameLock)
				}
				named[n.Name()] = i
			}
		}
		name, named := nameOf(l, i)
		entries[i] = entry{l, name, named}
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		if a.named != b.named {
			if a.named {
				return -1
			}
			return 1
		}
		if !a.named {
			return 0 // the caller's order
		}
		return cmp.Compare(a.name, b.name)
	})
	m := &Mutex{done: hold.Closed, err: redisync.ErrNotHeld, sameErr: sameErr, op: hold.NewOpLock()}
	for _, en := range entries {
		m.parts = append(m.parts, en.l)
		m.names = append(m.names, en.name)
		if m.refused == nil {
			m.refused = refusalOf(en.l)
		}
	}
	if m.refusal() == nil {
		m.members = oneScript(m.parts)
	}
	return m
}

// refusalOf is the error every method of component l returns without I/O,
// nil when it has none (or is a Locker of the caller's own).
func refusalOf(l redisync.Locker) error {
	if m, ok := l.(*Mutex); ok {
		return m.refusal()
	}
	return lockopt.Refusal(l)
}

// refusal is what Lock and TryLock return before any I/O: ErrSameLock, or
// a component's refusal; nil when there is none.
func (m *Mutex) refusal() error {
	if m.sameErr != nil {
		return m.sameErr
	}
	return m.refused
}

func isNil(l redisync.Locker) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// leaves is l, or for a multilock every lock inside it, however deep.
func leaves(l redisync.Locker) []redisync.Locker {
	m, ok := l.(*Mutex)
	if !ok {
		return []redisync.Locker{l}
	}
	var out []redisync.Locker
	for _, p := range m.parts {
		out = append(out, leaves(p)...)
	}
	return out
}

// isComparable reports whether l can be a map key (a Locker of the caller's
// own may be a struct holding a slice; such a one is not checked for
// repeats).
func isComparable(l redisync.Locker) bool { return reflect.TypeOf(l).Comparable() }

// oneScript returns the parts' descriptions when all of them can be taken
// with one script, nil otherwise.
func oneScript(parts []redisync.Locker) []*hold.Member {
	var ms []*hold.Member
	seen := map[string]bool{}
	for _, p := range parts {
		mb, ok := hold.MemberOf(p)
		if !ok || (len(ms) > 0 && mb.Engine != ms[0].Engine) || seen[mb.Request.Keys.Lock] {
			return nil
		}
		if mb.Engine.Cluster && len(ms) > 0 && keys.Slot(mb.Request.Keys.Lock) != keys.Slot(ms[0].Request.Keys.Lock) {
			return nil
		}
		seen[mb.Request.Keys.Lock] = true
		ms = append(ms, mb)
	}
	return ms
}

// Name returns the components' names in canonical order, joined by "+"
// (a component without a Name method appears as "component <i> (<type>)").
// A multilock that contains this one orders it by this name.
func (m *Mutex) Name() string { return strings.Join(m.names, "+") }

// nameOf is the name of component p, for messages.
func (m *Mutex) nameOf(p redisync.Locker) string {
	for i, q := range m.parts {
		if sameLocker(q, p) {
			return m.names[i]
		}
	}
	name, _ := nameOf(p, -1)
	return name
}

func sameLocker(a, b redisync.Locker) bool {
	if !isComparable(a) || !isComparable(b) {
		return false
	}
	return a == b
}

// Components returns the components in canonical order (the order in which
// they are acquired; they are released in reverse).
func (m *Mutex) Components() []redisync.Locker { return slices.Clone(m.parts) }

// Atomic reports whether each round is one script on one Client (every
// component an rlock whose keys can share a script), rather than one
// TryLock per component.
func (m *Mutex) Atomic() bool { return m.members != nil }

// Lock blocks until every component is held, or ctx ends. Each round tries
// every component in canonical order; when one is busy, or fails with an
// error that passes by itself (a connection refused or reset, a server
// loading: the class every lock's own Lock retries), the ones taken in that
// round are released before the round ends, and the next round starts
// after a jittered backoff. It returns nil, ctx.Err() unwrapped (nothing
// held), or at once: ErrSameLock or a component's refusal (the error its
// every method returns without I/O: redisync.ErrInvalidName,
// ErrInvalidOwner, ErrInvalidLease, semaphore.ErrBadCount — the first in
// canonical order), both before any I/O, or the first component error that
// no retry changes — a key of another kind, NOPERM, ErrEvictionPolicy
// (nothing held). On a held multilock it waits for that hold's Unlock
// (NewReentrant: it nests every component). Lock panics on a nil ctx.
func (m *Mutex) Lock(ctx context.Context) error {
	if ctx == nil {
		panic("multilock: nil Context")
	}
	if err := m.refusal(); err != nil {
		return err
	}
	if err := m.gate.Enter(ctx); err != nil {
		return err
	}
	err := m.lock(ctx)
	m.gate.Acquired(err == nil)
	return err
}

func (m *Mutex) lock(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, hint, err := m.round(ctx)
		if ok {
			return nil
		}
		if err != nil && (ctx.Err() != nil || ierrs.Classify(err) != ierrs.Transient) {
			return err
		}
		wait := rand.N(min(MaxBackoff, MinBackoff<<min(attempt, 16)))
		if hint > 0 && hint < wait {
			wait = hint
		}
		t := time.NewTimer(max(wait, time.Millisecond/10))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// TryLock makes one round: (true, nil) with every component held, (false,
// nil) when one is busy (nothing held) or, without I/O, when this
// multilock is held or being locked by another goroutine. ErrSameLock and
// a component's refusal are returned as by Lock, before any I/O.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if ctx == nil {
		panic("multilock: nil Context")
	}
	if err := m.refusal(); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if ok, err := m.gate.TryEnter(); !ok {
		return false, err
	}
	ok, _, err := m.round(ctx)
	m.gate.Acquired(ok && err == nil)
	return ok, err
}

// round acquires every component or none.
func (m *Mutex) round(ctx context.Context) (bool, time.Duration, error) {
	if err := m.op.LockCtx(ctx); err != nil {
		return false, 0, err
	}
	defer m.unlockOp(ctx)
	if owed := m.owedParts(); len(owed) > 0 {
		// Best effort: a component still held from the last hold would
		// otherwise be re-entered by this round, and keep a count that
		// no Unlock removes.
		failed, _ := m.releaseParts(ctx, owed, true)
		m.setOwed(failed)
	}
	var (
		ok   bool
		hint time.Duration
		err  error
	)
	if m.members != nil {
		ok, hint, err = m.roundOneScript(ctx)
	} else {
		ok, err = m.roundEach(ctx)
	}
	if ok {
		m.held()
	}
	return ok, hint, err
}

func (m *Mutex) roundOneScript(ctx context.Context) (bool, time.Duration, error) {
	// The script takes the components' holds behind their handles' backs:
	// it passes their gates first, as their own TryLock would, so that a
	// goroutine locking a component directly meanwhile waits (and a held
	// component is busy, not re-entered).
	for i, mb := range m.members {
		if ok, err := mb.Gate.TryEnter(); !ok {
			for _, prev := range m.members[:i] {
				prev.Gate.Acquired(false)
			}
			return false, 0, err
		}
	}
	holds := make([]*hold.Hold, len(m.members))
	reqs := make([]scripts.LockRequest, len(m.members))
	for i, mb := range m.members {
		holds[i], reqs[i] = mb.Hold, mb.Request
	}
	e := m.members[0].Engine
	var (
		ok   bool
		hint time.Duration
		err  error
	)
	sent := time.Now()
	// The Client's checks before an acquisition (the eviction check), as
	// each component's own TryLock runs them.
	for _, mb := range m.members {
		if err = e.Check(ctx, memberTarget(mb)); err != nil {
			break
		}
	}
	if err == nil {
		ok, hint, err = hold.AttemptAll(ctx, holds, func(ctx context.Context) ([]scripts.Acquired, scripts.Acquired, error) {
			return scripts.LockAcquireAll(ctx, e.RC, reqs)
		})
	}
	for _, mb := range m.members {
		mb.Gate.Acquired(ok && err == nil) // each component's Unlock exits its gate
	}
	if ok && err == nil {
		for _, mb := range m.members {
			e.Observe(obs.Event{Kind: obs.Acquired, Primitive: memberTarget(mb).Primitive, Name: memberTarget(mb).Name,
				Wait: time.Since(sent), Latency: time.Since(sent)})
		}
	}
	return ok, hint, err
}

// memberTarget is what a one-script component is to the Client's checks
// and observer: an rlock (the only kind hold.MemberOf describes) and its
// name.
func memberTarget(mb *hold.Member) obs.Target {
	return obs.Target{Primitive: "rlock", Name: mb.Request.Keys.Lock}
}

func (m *Mutex) roundEach(ctx context.Context) (bool, error) {
	for i, p := range m.parts {
		ok, err := p.TryLock(ctx)
		if err == nil && ok {
			continue
		}
		// Partial holds never outlive the call: give back what this round took.
		if rerr := m.release(ctx, m.parts[:i]); rerr != nil {
			err = ierrs.Join(err, rerr)
		}
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			err = ctx.Err()
		}
		return false, err
	}
	return true, nil
}

// release unlocks parts in reverse order, even after ctx ended: an undo of
// the round (engine.Undo), without a WAIT — nobody reads a replica's
// acknowledgement of it, and behind a lagging replica one held the round's
// return back for the undo's whole bound.
func (m *Mutex) release(ctx context.Context, parts []redisync.Locker) error {
	bctx, cancel := engine.Undo(ctx)
	defer cancel()
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		if err := parts[i].Unlock(bctx); err != nil {
			errs = append(errs, fmt.Errorf("multilock: releasing %s: %w", m.nameOf(parts[i]), err))
		}
	}
	return ierrs.Join(errs...)
}

// held records one more hold; the first starts the loss watcher.
func (m *Mutex) held() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds++
	if m.holds > 1 {
		return
	}
	m.done, m.err, m.stop, m.watched = make(chan struct{}), nil, make(chan struct{}), make(chan struct{})
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.stop)}}
	for _, p := range m.parts {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(p.Done())})
	}
	done, stop, watched := m.done, m.stop, m.watched
	go func() {
		defer close(watched)
		chosen, _, _ := reflect.Select(cases)
		if chosen == 0 {
			return // Unlock took over
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		select {
		case <-stop:
			return
		default:
		}
		m.err = redisync.ErrLockLost
		if err := m.parts[chosen-1].Err(); errors.Is(err, redisync.ErrLockLost) {
			m.err = err
		}
		close(done)
		for _, p := range m.parts {
			if errors.Is(p.Err(), redisync.ErrClosed) {
				m.clientClosed() // no Lock can succeed any more
				break
			}
		}
	}()
}

// clientClosed ends every wait at the gate, now and later, with
// redisync.ErrClosed: a component's Client was closed. The lost hold keeps
// the gate until its Unlock, which may never come then.
func (m *Mutex) clientClosed() { m.closeOnce.Do(func() { close(m.closed) }) }

// Unlock releases one hold of every component, in reverse canonical order,
// and returns their errors joined (each names its component). The hold
// ends locally first — the loss watcher stops, and after the last hold Done
// closes — and every component is released whatever ctx says (each
// component's own Unlock decides how ctx bounds its wait, and finishes a
// release it stopped waiting for). Unlock waits for another call of this
// multilock in progress (a round of NewReentrant's, a retry of owed
// releases) until ctx ends; it then returns ctx.Err() and that call sends
// the releases when it ends. A component whose Unlock reports a failure
// other than ctx's end is remembered: the next Unlock retries it first
// (Unlock on a multilock that holds nothing but still owes releases
// retries them and returns their errors), as does the next Lock before it
// takes the components again. It returns a component's refusal (see Lock)
// without I/O, redisync.ErrNotHeld when the multilock holds nothing of its
// own and owes nothing — also while its Lock is still in flight: the
// Unlock sends nothing, and the hold that Lock is taking stands — and an
// error matching redisync.ErrLockLost when a component was lost (every
// component is still released). Unlock panics on a nil ctx.
func (m *Mutex) Unlock(ctx context.Context) error {
	if ctx == nil {
		panic("multilock: nil Context")
	}
	if m.refused != nil {
		return m.refused // it never held, and owes nothing
	}
	// The hold this Unlock ends is taken now, before any wait, as a lock
	// handle's Unlock takes it (internal/hold): a concurrent Unlock finds
	// one hold fewer, and a round that ends meanwhile grants a hold that
	// is not this Unlock's.
	m.mu.Lock()
	n := m.holds
	if n == 0 {
		owes := len(m.owed) > 0
		m.mu.Unlock()
		if !owes {
			return redisync.ErrNotHeld
		}
		return m.retryOwed(ctx)
	}
	m.holds--
	done, stop, watched := m.done, m.stop, m.watched
	if n == 1 {
		close(stop)
	}
	m.mu.Unlock()
	// Whatever the releases report, the hold has ended here: let the next
	// goroutine sharing the multilock in.
	defer m.gate.Exit()
	if n == 1 {
		<-watched
		m.mu.Lock()
		select {
		case <-done: // lost: keep the loss as the reason
		default:
			close(done)
			if m.done == done { // no round of NewReentrant's has held since
				m.err = redisync.ErrNotHeld
			}
		}
		m.mu.Unlock()
	}
	reversed := make([]redisync.Locker, 0, len(m.parts))
	for i := len(m.parts) - 1; i >= 0; i-- {
		reversed = append(reversed, m.parts[i])
	}
	if err := m.op.LockCtx(ctx); err != nil {
		// The call holding op sends these releases before it gives op
		// back; if it gave op back before it saw them, this Unlock sends
		// them itself.
		m.mu.Lock()
		m.handed = append(m.handed, reversed...)
		m.mu.Unlock()
		if m.op.TryLock() {
			m.unlockOp(ctx)
		}
		return err
	}
	var errs []error
	if owed := m.owedParts(); len(owed) > 0 {
		failed, err := m.releaseParts(ctx, owed, true)
		m.setOwed(failed)
		errs = append(errs, err)
	}
	failed, err := m.releaseParts(ctx, reversed, false)
	errs = append(errs, err)
	m.addOwed(failed)
	m.unlockOp(ctx)
	err = ierrs.Join(errs...)
	if errors.Is(err, redisync.ErrLockLost) {
		m.mu.Lock()
		if m.holds == 0 && m.done == done {
			m.err = redisync.ErrLockLost
		}
		m.mu.Unlock()
	}
	return err
}

// retryOwed retries the owed releases of a multilock that holds nothing:
// their errors joined, ErrNotHeld when a round retried them meanwhile, or
// ctx.Err() when ctx ends while another call holds op.
func (m *Mutex) retryOwed(ctx context.Context) error {
	if err := m.op.LockCtx(ctx); err != nil {
		return err
	}
	defer m.unlockOp(ctx)
	owed := m.owedParts()
	if len(owed) == 0 {
		return redisync.ErrNotHeld
	}
	failed, err := m.releaseParts(ctx, owed, true)
	m.setOwed(failed)
	return err
}

// unlockOp gives op back, after sending the releases that Unlocks handed
// over when their ctx ended while they waited for it. It waits for each for
// at most engine.UndoWait past ctx: a component's Unlock finishes a release
// it stopped waiting for by itself. Those that fail are owed.
func (m *Mutex) unlockOp(ctx context.Context) {
	for {
		m.mu.Lock()
		parts := m.handed
		m.handed = nil
		if len(parts) == 0 {
			m.op.Unlock() // under mu: an Unlock that hands over after this finds op free
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.UndoWait)
		failed, _ := m.releaseParts(rctx, parts, false)
		cancel()
		m.addOwed(failed)
	}
}

// owedParts is what is owed now; setOwed and addOwed change it (under op).
func (m *Mutex) owedParts() []redisync.Locker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.owed)
}

func (m *Mutex) setOwed(parts []redisync.Locker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owed = parts
}

func (m *Mutex) addOwed(parts []redisync.Locker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owed = append(m.owed, parts...)
}

// releaseParts unlocks parts in the order given and returns the ones whose
// release failed (to be retried), with every error joined. A component
// that reports its loss has cleaned up after itself; one that says it is
// not held is not retried — on a retry (retry set) that is success: the
// earlier release landed although its reply did not.
func (m *Mutex) releaseParts(ctx context.Context, parts []redisync.Locker, retry bool) ([]redisync.Locker, error) {
	var (
		failed []redisync.Locker
		errs   []error
	)
	for _, p := range parts {
		err := p.Unlock(ctx)
		switch {
		case err == nil:
			continue
		case errors.Is(err, redisync.ErrNotHeld) && retry:
			continue
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			// The component stopped waiting for its release's reply, which
			// it finishes itself (a Locker's Unlock releases whatever ctx
			// says): nothing is owed, and a retry would find it not held.
		case !errors.Is(err, redisync.ErrNotHeld) && !errors.Is(err, redisync.ErrLockLost):
			failed = append(failed, p)
		}
		errs = append(errs, fmt.Errorf("multilock: releasing %s: %w", m.nameOf(p), err))
	}
	return failed, ierrs.Join(errs...)
}

// Token returns the fencing token of the first component in canonical
// order, 0 when not held. A multilock guards several resources, and each
// should check the token of its own lock: Components()[i].Token().
func (m *Mutex) Token() uint64 {
	if m.Err() != nil {
		return 0
	}
	return m.parts[0].Token()
}

// Done returns a channel that is closed when the hold ends: released by the
// last Unlock, or when any component is lost.
func (m *Mutex) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done
}

// Err returns nil while every component is held, an error matching
// redisync.ErrLockLost after any component was lost, and
// redisync.ErrNotHeld otherwise.
func (m *Mutex) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}
