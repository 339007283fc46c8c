// Package hold is the hold of one lock handle: the state machine every lock
// handle shares (rlock, fairlock, both sides of rwlock, semaphore permits,
// redlock), with the primitive supplying its acquire, release and renew
// scripts. A semaphore Permit is a hold of count one whose acquire is
// sem_acquire.lua. A redlock acquires through AttemptOwn — its quorum round
// settles its own nodes' replies — and keeps its count here only
// (LocalCount): its release goes to every node. A multilock drives its
// components' holds (AttemptAll for a one-script round) and shares the
// Gate, but keeps a small hold of its own: see the multilock package doc
// for why.
//
// A Hold knows how many holds its handle has (each Lock granted adds one,
// each Unlock removes one), the fencing token, the Done channel and the
// watchdog registration of the current hold. It runs a primitive's acquire
// script through Attempt and its release script through Unlock, and makes
// both safe against lost replies, cancellation and owners that several
// handles share:
//
//   - an acquire is never abandoned in flight (its reply, one round trip,
//     decides what to undo); a grant the caller no longer wants — or whose
//     lease had already run out by the local clock when the reply came — is
//     undone with an owner-checked release that acts only on what that
//     acquire did;
//   - Unlock always releases: it ends the hold locally at once (renewal
//     stops, Done closes) and queues the release, whatever ctx says. ctx
//     bounds only how long Unlock waits for the reply; when it ends first,
//     a Client task finishes the release (bounded by
//     engine.CompensateTimeout after ctx's end), and Client.Close waits for
//     it. The handle's queued releases always reach Redis before its next
//     acquire, in order;
//   - a release whose reply never came stays queued and is re-sent, as the
//     same request, before the handle's next operation; it never
//     decrements twice;
//   - a hold the watchdog reports lost closes Done, and the next Unlock
//     removes whatever is left of it and reports the loss.
//
// # Idempotent release, with shared owners
//
// An owner used by one handle only (the default: a drawn owner id) has a
// count in Redis that only this handle changes, one operation at a time, so
// each release names the count it expects: a repeated release finds one
// less and does nothing, and the undo of an acquire acts only if the count
// is one more than before it.
//
// An owner id given with WithOwner may be shared by several handles (or a
// Redisson client), and their counts mix, so expectations prove nothing:
// "one less than I expected" may be another handle's release. Such a handle
// has a latch: a field "redisync:latch:<handle id>" of the lock hash, where
// each of its acquires and releases leaves its request id and outcome (a
// handle's operations are serialized, so one field per handle suffices). A
// retried release finds its own request there and replays the recorded
// outcome instead of decrementing again; the undo of an acquire acts only
// if that very acquire left its mark, and marks it undone so the acquire,
// if it is still on its way, refuses. Every release also carries the
// hold's fencing token, so it never acts on a later hold of the same owner.
// Each handle releases exactly its own holds. The latch field goes away with
// the hash; Redisson's scripts ignore it.
package hold

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/scripts"
	"github.com/redisync/redisync/watchdog"
)

// AcquireFunc runs a primitive's acquire script once. A primitive whose
// scripts keep latches (Config.Latched) passes Hold.Latch() to the script.
type AcquireFunc func(ctx context.Context) (scripts.Acquired, error)

// ReleaseFunc runs a primitive's release script once.
type ReleaseFunc func(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error)

// Config describes the lock a Hold runs on.
type Config struct {
	Engine       *engine.Engine
	Lease        time.Duration // the lease of each acquisition
	Fixed        bool          // no renewal: the hold ends at its lease
	NonReentrant bool
	// Shared is set when the owner id was given (WithOwner): other handles
	// or processes may hold under it too, so the owner's count in Redis is
	// not this handle's alone.
	Shared bool
	// Latched is set when the primitive's acquire and release scripts keep
	// latches (the lock layout); see the package doc. It matters only with
	// Shared.
	Latched bool
	// LocalCount is set when nested holds are counted here only: a
	// reentrant Lock on a held handle adds one without I/O, and only the
	// last Unlock sends a release (redlock, whose nodes keep no count).
	LocalCount bool
	Release    ReleaseFunc
	// Renewer renews the hold's lease; RenewTarget builds its watchdog
	// target for a hold with the given token.
	Renewer     watchdog.Renewer
	RenewTarget func(token uint64) any
	// Observed names the hold in Released and Lost events, and in errors.
	Observed obs.Target
}

// Hold is one handle's hold; all methods are safe for concurrent use.
type Hold struct {
	cfg   Config
	self  [1]*Hold // this hold as AttemptAll's slice, without allocating one each time
	latch string   // this handle's latch field; "" when it has none

	// op serializes the handle's round trips (acquire, release, undo), so
	// that counts and latches are never stale and releases reach Redis in
	// order, before the next acquire.
	op  opLock
	seq uint64        // request ids (under op)
	cur scripts.Latch // the latch of the acquire in flight (under op)

	mu      sync.Mutex
	holds   int64           // this handle's holds: grants minus Unlocks
	remote  int64           // the owner's count in Redis as last seen
	token   uint64          // fencing token of the current hold
	done    chan struct{}   // closed when the current hold ends
	err     error           // nil while held; why the last hold ended otherwise
	renewal *watchdog.Lease // the current hold's registration with the watchdog
	lost    bool            // the last hold was lost: Unlock cleans up and reports it
	held    bool            // the handle has had a hold of its own
	ended   uint64          // token of the last hold that ended (what a cleanup may touch)
	since   time.Time       // when the current hold was acquired (sent)
	queue   []*job          // releases not yet answered by Redis, in order
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// LatchPrefix starts the name of a handle's latch field in a lock hash.
const LatchPrefix = "redisync:latch:"

// New returns a Hold with no hold.
func New(cfg Config) *Hold {
	h := &Hold{cfg: cfg, op: newOpLock(), done: closedChan, err: errs.ErrNotHeld}
	h.self = [1]*Hold{h}
	if cfg.Shared && cfg.Latched && !sharedOwnerAsUnique && !latchDisabled {
		h.latch = LatchPrefix + cfg.Engine.NewOwner()
	}
	return h
}

// Latch is the latch to pass to the acquire script now running (the zero
// Latch when the handle has none). Only an AcquireFunc may call it.
func (h *Hold) Latch() scripts.Latch { return h.cur }

// nextLatch draws the latch of a new request (under op).
func (h *Hold) nextLatch() scripts.Latch {
	if h.latch == "" {
		return scripts.Latch{}
	}
	h.seq++
	return scripts.Latch{Field: h.latch, Req: strconv.FormatUint(h.seq, 36)}
}

// Attempt makes one acquisition with acquire, in the shape of engine.Attempt:
// whether it acquired, and when busy the wait hint from the script.
func (h *Hold) Attempt(ctx context.Context, acquire AcquireFunc) (bool, time.Duration, error) {
	return attemptAll(ctx, h.self[:], true, func(ctx context.Context) ([]scripts.Acquired, scripts.Acquired, error) {
		res, err := acquire(ctx)
		if err != nil || !res.OK {
			return nil, res, err
		}
		return []scripts.Acquired{res}, scripts.Acquired{}, nil
	})
}

// AcquireAllFunc runs one script that acquires several holds, all or none:
// one result per hold when granted, or (nil, busy) with busy.PTTL the wait
// hint.
type AcquireAllFunc func(ctx context.Context) (granted []scripts.Acquired, busy scripts.Acquired, err error)

// AttemptAll makes one acquisition of several holds of one Client with a
// single script (a same-slot multilock), with Attempt's guarantees for every
// one of them. The holds must be passed in one canonical order (their op
// locks are taken in it). The script keeps no latches: the undo of a
// shared owner's grant there relies on the count it expects.
func AttemptAll(ctx context.Context, holds []*Hold, acquire AcquireAllFunc) (bool, time.Duration, error) {
	return attemptAll(ctx, holds, false, acquire)
}

func attemptAll(ctx context.Context, holds []*Hold, latched bool, acquire AcquireAllFunc) (bool, time.Duration, error) {
	// The op locks bound the wait by ctx: one may be held by a Client task
	// still undoing an earlier attempt against a server that does not
	// answer (up to the settle bound).
	for i, h := range holds {
		if err := h.op.LockCtx(ctx); err != nil {
			for _, taken := range holds[:i] {
				taken.op.Unlock()
			}
			return false, 0, err
		}
	}
	a := &attempt{ctx: ctx, holds: holds, latched: latched}
	defer func() {
		if !a.handedOff {
			a.unlockOps()
		}
	}()
	e := holds[0].cfg.Engine
	if e.IsClosed() {
		return false, 0, errs.ErrClosed
	}
	for _, h := range holds {
		h.mu.Lock()
		n := h.holds
		h.mu.Unlock()
		if n > 0 && h.cfg.NonReentrant {
			return false, 0, errs.ErrNonReentrant
		}
	}
	// The acquire is never abandoned in flight (see engine.Settle): its
	// reply tells exactly what to undo. If ctx ends first, Lock returns at
	// once and the Client's task awaits the reply, undoes a grant, and only
	// then frees the handle for its next operation.
	type outcome struct {
		res    []scripts.Acquired
		busy   scripts.Acquired
		err    error
		unsent bool // the acquire was not sent (queued releases failed first)
	}
	a.sent = time.Now()
	out, ok := engine.Settle(e, ctx, func(actx context.Context) outcome {
		// Releases this handle queued go first, in order, so an acquire
		// never meets (and re-enters) a hold its own Unlock already ended.
		for _, h := range holds {
			if err := h.drain(actx); err != nil {
				return outcome{err: err, unsent: true}
			}
		}
		a.before = a.one[:0]
		for _, h := range holds {
			h.mu.Lock()
			a.before = append(a.before, h.remote)
			h.mu.Unlock()
			h.cur = scripts.Latch{}
			if a.latched {
				h.cur = h.nextLatch()
			}
		}
		a.sent = time.Now()
		res, busy, err := acquire(actx)
		return outcome{res: res, busy: busy, err: err}
	}, func(out outcome) {
		defer a.unlockOps()
		if !out.unsent && (out.res != nil || (out.err != nil && !scripts.IsReply(out.err))) {
			a.undo() // granted, or no reply: the release acts only on what this acquire did
		}
	})
	if !ok {
		a.handedOff = true
		return false, 0, ctx.Err()
	}
	res, busy, err, sent := out.res, out.busy, out.err, a.sent
	if err != nil {
		if errors.Is(err, scripts.ErrNonReentrant) {
			return false, 0, errs.ErrNonReentrant
		}
		if !out.unsent && !scripts.IsReply(err) {
			// No reply: the script may have run. Undo grants we cannot see;
			// if even that fails, the holds have no renewal and expire.
			a.undoLater(e)
		}
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return false, 0, err
	}
	if res == nil {
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		return false, time.Duration(busy.PTTL) * time.Millisecond, nil
	}
	if ctx.Err() != nil {
		// Granted, but the caller has gone: give it back.
		a.undoLater(e)
		return false, 0, ctx.Err()
	}
	if !expiredGrantReported {
		for _, h := range holds {
			if time.Since(sent) >= h.cfg.Lease-watchdog.Drift(h.cfg.Lease) {
				// The reply came after the lease (less the drift margin)
				// had run out by our clock: the grant may already be
				// someone else's. Give it back and keep waiting.
				a.undoLater(e)
				return false, 0, nil
			}
		}
	}
	for i, h := range holds {
		if err := h.granted(res[i], sent); err != nil {
			a.undoLater(e)
			return false, 0, err
		}
	}
	return true, 0, nil
}

// OwnAcquireFunc makes an acquisition that the primitive settles itself
// (redlock's quorum round, whose nodes answer separately): it never
// abandons an acquire in flight, and gives back whatever it does not
// report as granted. It returns the grant (res.OK false when busy or
// failed) and when the acquisition was sent (the lease counts from there).
type OwnAcquireFunc func(ctx context.Context) (res scripts.Acquired, sent time.Time, err error)

// AttemptOwn makes one acquisition with acquire and keeps for it what
// Attempt guarantees about the hold: the handle's queued releases reach
// Redis first; a grant whose caller has gone, or whose lease had run out by
// the local clock when acquire returned, is given back with Config.Release
// by a Client task (the handle's next operation waits for it) and never
// reported; a held LocalCount handle nests without I/O. It reports whether
// the handle now holds, and the error of acquire or of the queued releases.
func (h *Hold) AttemptOwn(ctx context.Context, acquire OwnAcquireFunc) (bool, error) {
	if err := h.op.LockCtx(ctx); err != nil {
		return false, err
	}
	handedOff := false
	defer func() {
		if !handedOff {
			h.op.Unlock()
		}
	}()
	e := h.cfg.Engine
	if e.IsClosed() {
		return false, errs.ErrClosed
	}
	h.mu.Lock()
	n, before := h.holds, h.remote
	nest := n > 0 && h.cfg.LocalCount && !h.cfg.NonReentrant
	if nest {
		h.holds++
	}
	h.mu.Unlock()
	switch {
	case nest:
		return true, nil
	case n > 0 && h.cfg.NonReentrant:
		return false, errs.ErrNonReentrant
	}
	if err := h.drain(ctx); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, err
	}
	res, sent, err := acquire(ctx)
	if err != nil || !res.OK {
		return false, err
	}
	giveBack := func() {
		handedOff = true
		e.Go(func() {
			defer h.op.Unlock()
			h.compensate(ctx, before)
		})
	}
	if ctx.Err() != nil {
		giveBack() // granted, but the caller has gone
		return false, ctx.Err()
	}
	if !expiredGrantReported && time.Since(sent) >= h.cfg.Lease-watchdog.Drift(h.cfg.Lease) {
		giveBack() // the grant may already be someone else's
		return false, nil
	}
	if err := h.granted(res, sent); err != nil {
		giveBack()
		return false, err
	}
	return true, nil
}

// attempt is the state of one attemptAll call: the holds whose op locks it
// holds, and the owners' counts before it (what an undo restores). One
// value instead of several closures keeps the hot path's allocations down.
type attempt struct {
	ctx       context.Context
	holds     []*Hold
	before    []int64
	one       [1]int64  // before's storage for the usual single hold
	sent      time.Time // when the acquire was sent
	latched   bool      // the acquire script takes the holds' latches
	handedOff bool      // a Client task unlocks the ops after the undo
}

func (a *attempt) unlockOps() {
	for _, h := range a.holds {
		h.op.Unlock()
	}
}

// undo gives back whatever the acquire granted (see compensate).
func (a *attempt) undo() {
	for i, h := range a.holds {
		var before int64
		if i < len(a.before) {
			before = a.before[i]
		}
		h.compensate(a.ctx, before)
	}
}

// undoLater gives the undo to a Client task, which keeps the handle's
// operations waiting until it is done: the caller returns at once even when
// the network swallows the release's reply.
func (a *attempt) undoLater(e *engine.Engine) {
	a.handedOff = true
	e.Go(func() {
		defer a.unlockOps()
		a.undo()
	})
}

// granted records a successful acquisition.
func (h *Hold) granted(res scripts.Acquired, sent time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.cfg.Engine.Watchdog
	if h.renewal != nil { // re-entered: the lease was extended
		h.holds++
		h.remote = res.Count
		w.Confirm(h.renewal, sent)
		return nil
	}
	l := &watchdog.Lease{TTL: h.cfg.Lease, Fixed: h.cfg.Fixed, Target: h.cfg.RenewTarget(res.Token)}
	if !h.cfg.Fixed {
		l.Renewer = h.cfg.Renewer
	}
	l.OnLost = func(err error) { h.onLost(l, err) }
	if err := w.Add(l, sent); err != nil {
		return errs.ErrClosed
	}
	h.holds, h.remote, h.held = 1, res.Count, true
	h.renewal, h.token, h.err, h.lost = l, res.Token, nil, false
	h.done, h.since = make(chan struct{}), sent
	return nil
}

// compensate undoes a grant whose reply we did not see or no longer want
// (under op). With a latch it names the acquire's request; otherwise the
// owner's count is either before (nothing happened) or before+1, and the
// release acts only in the second case.
func (h *Hold) compensate(ctx context.Context, before int64) {
	bctx, cancel := engine.Background(ctx)
	defer cancel()
	args := scripts.ReleaseArgs{Expected: before + 1}
	if h.cur.Field != "" {
		args = scripts.ReleaseArgs{Expected: scripts.ReleaseUndo, Latch: h.cur}
	}
	r, err := h.send(bctx, args)
	if err != nil {
		return
	}
	h.mu.Lock()
	h.remote = r.Count
	h.mu.Unlock()
}

// A job is one release that Unlock queued: it reaches Redis under op, in
// order, and stays queued until Redis has answered it.
type job struct {
	kind    jobKind
	token   uint64          // the hold's fencing token (kindOne)
	renewal *watchdog.Lease // the hold it releases, still current when nested
	result  error           // kindAll: the loss it reports

	args  scripts.ReleaseArgs
	fixed bool // args are drawn (at the first send): every resend repeats them
	sends int

	// done, when not nil, is closed when err is known; told reports that.
	done chan struct{}
	told bool
	err  error
}

type jobKind uint8

const (
	kindOne  jobKind = iota // one hold of this handle
	kindAll                 // whatever is left of a lost hold
	kindAny                 // no hold on this handle: one of the owner's (WithOwner resumed)
	kindWait                // no hold: wait for the releases queued before
)

// tell reports err to the job's Unlock, once (under mu).
func (j *job) tell(err error) {
	if j.told {
		return
	}
	j.told, j.err = true, err
	if j.done != nil {
		close(j.done)
	}
}

// Unlock releases one hold; see rlock.Mutex.Unlock for the contract.
//
// The hold ends locally at once: its count drops, and after the last one
// renewal stops and Done closes. The release is queued and sent whatever
// ctx says; ctx bounds only how long Unlock waits for the reply. If ctx is
// done first, Unlock returns ctx.Err() and a Client task completes the
// release (Client.Close waits for it).
func (h *Hold) Unlock(ctx context.Context) error {
	if unlockHonoursCtx && ctx.Err() != nil {
		return ctx.Err()
	}
	j := &job{}
	h.mu.Lock()
	n, lost, renewal := h.holds, h.lost, h.renewal
	switch {
	case n == 0 && lost:
		h.lost = false
		j.kind, j.result, j.token = kindAll, h.err, h.ended
	case n == 0 && len(h.queue) > 0 && h.queue[0].told:
		// An earlier Unlock was told an error and its release is still
		// queued: this one sees it through (and releases nothing more).
		j.kind = kindWait
	case n == 0 && h.held:
		// The handle's own holds are over (their releases done or under
		// way): a second Unlock is turned away, as sync.Mutex's would be,
		// and never takes a hold that is not this handle's.
		h.mu.Unlock()
		return errs.ErrNotHeld
	case n == 0:
		// This handle never held: an owner resumed with WithOwner may
		// still hold in Redis (a process that crashed holding it).
		j.kind = kindAny
	case n > 1 && h.cfg.LocalCount:
		h.holds-- // a nested hold Redis never saw
		h.mu.Unlock()
		return nil
	default:
		h.holds--
		j.kind, j.token, j.renewal = kindOne, h.token, renewal
	}
	h.mu.Unlock()
	if j.kind == kindOne && n == 1 {
		if h.cfg.Engine.Watchdog.Remove(renewal) {
			h.end(renewal, errs.ErrNotHeld, false)
		} else {
			// Lost while we were getting here. The watchdog's OnLost may
			// not have run yet: end the hold now (OnLost then finds it
			// ended), and remove whatever is left of it.
			h.end(renewal, LostReason(h.cfg.Engine), false)
			h.mu.Lock()
			h.lost = false // this Unlock cleans up and reports it
			j.kind, j.result, j.token = kindAll, h.err, h.ended
			h.mu.Unlock()
		}
	}
	return h.await(ctx, j)
}

// await queues j and sees the queue through: on this goroutine when ctx
// cannot end, otherwise as a Client task that Unlock waits for until ctx
// ends.
func (h *Hold) await(ctx context.Context, j *job) error {
	if ctx.Done() == nil {
		h.mu.Lock()
		h.queue = append(h.queue, j)
		h.mu.Unlock()
		h.op.Lock()
		_ = h.drain(ctx)
		h.op.Unlock()
		h.mu.Lock()
		defer h.mu.Unlock()
		return j.err
	}
	j.done = make(chan struct{})
	h.mu.Lock()
	h.queue = append(h.queue, j)
	h.mu.Unlock()
	h.cfg.Engine.Go(func() {
		dctx, cancel := engine.Detach(ctx)
		defer cancel()
		h.op.Lock()
		defer h.op.Unlock()
		_ = h.drain(dctx)
	})
	if err := ctx.Err(); err != nil {
		return err // the hold has ended here; the release completes in the background
	}
	select {
	case <-j.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		return j.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain sends the queued releases in order (under op). When one gets no
// reply it stays queued, with everything after it, to be re-sent before the
// handle's next operation; their Unlocks are told the error.
func (h *Hold) drain(ctx context.Context) error {
	for {
		h.mu.Lock()
		if len(h.queue) == 0 {
			h.mu.Unlock()
			return nil
		}
		j := h.queue[0]
		h.mu.Unlock()
		err, replied := h.run(ctx, j)
		h.mu.Lock()
		if !replied {
			for _, k := range h.queue {
				k.tell(err)
			}
			h.mu.Unlock()
			return err
		}
		h.queue[0] = nil
		h.queue = h.queue[1:]
		if len(h.queue) == 0 {
			h.queue = nil
		}
		j.tell(err)
		h.mu.Unlock()
	}
}

// run sends job j (under op) and reports what its Unlock returns, and
// whether Redis answered.
func (h *Hold) run(ctx context.Context, j *job) (error, bool) {
	if j.kind == kindWait {
		return nil, true
	}
	if !j.fixed {
		j.fixed = true
		switch j.kind {
		case kindAll:
			// Only the lost hold's remains: never a later hold of the owner.
			j.args.Expected, j.args.Token = scripts.ReleaseAll, j.token
		case kindAny:
			j.args.Expected = scripts.ReleaseAny
		default:
			j.args.Token = j.token
			h.mu.Lock()
			j.args.Expected = h.remote
			h.mu.Unlock()
			if (h.cfg.Shared && !sharedOwnerAsUnique) || j.args.Expected <= 0 {
				// Another handle may have changed the count: release one,
				// guarded by the token and the latch.
				j.args.Expected = scripts.ReleaseAny
			}
		}
		j.args.Latch = h.nextLatch()
	}
	j.sends++
	r, err := h.send(ctx, j.args)
	if err != nil {
		if scripts.IsReply(err) {
			return h.wrap(err), true // an answer: the script did not run
		}
		return h.wrap(err), false
	}
	h.mu.Lock()
	h.remote = r.Count
	h.mu.Unlock()
	switch j.kind {
	case kindAll:
		return j.result, true
	case kindAny:
		if !r.Acted {
			return errs.ErrNotHeld, true
		}
		return nil, true
	}
	if !r.Acted && j.args.Expected > 0 && r.Count == j.args.Expected-1 && (r.Count > 0 || j.sends > 1) {
		// An earlier send of this release, or another user of this unique
		// owner (a Redisson client, an operator), already did it.
		r.Acted = true
	}
	if !r.Acted {
		// Our hold is gone: the lease ran out, or the key was deleted or
		// taken over. A nested hold that was still current ends here.
		if h.cfg.Engine.Watchdog.Remove(j.renewal) {
			h.end(j.renewal, errs.ErrLockLost, false)
		}
		return errs.ErrLockLost, true
	}
	return nil, true
}

// send runs the release script, repeating it (the same request) after
// transient transport errors for up to engine.CompensateTimeout.
func (h *Hold) send(ctx context.Context, args scripts.ReleaseArgs) (scripts.Released, error) {
	deadline := time.Now().Add(engine.CompensateTimeout)
	backoff := 10 * time.Millisecond
	for {
		r, err := h.cfg.Release(ctx, args)
		if err == nil || !engine.Transient(err) || ctx.Err() != nil || h.cfg.Engine.IsClosed() {
			return r, err
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		if time.Now().Add(wait).After(deadline) {
			return r, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return r, err
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// wrap says which release failed.
func (h *Hold) wrap(err error) error {
	return engine.WrapIO(h.cfg.Observed.Primitive+": release", h.cfg.Observed.Name, err)
}

// Quiesce waits until no operation of this hold is in progress, including
// the undo of a cancelled acquire that a Client task is finishing (a
// handle's other hold, such as rwlock's other side, may depend on it).
func (h *Hold) Quiesce() {
	h.op.Lock()
	//lint:ignore SA2001 an empty critical section: waiting for the holder is the point
	h.op.Unlock()
}

// AfterOps runs f once no operation of this hold is in progress: at once
// on this goroutine when none is, otherwise in a Client task after the one
// in progress ends (the undo of an acquire whose caller has gone). f runs
// before the handle's next operation. A semaphore's Acquire takes its
// request out of the queue this way, so an acquire still in flight cannot
// put it back afterwards.
func (h *Hold) AfterOps(f func()) {
	if h.op.TryLock() {
		defer h.op.Unlock()
		f()
		return
	}
	h.cfg.Engine.Go(func() {
		h.op.Lock()
		defer h.op.Unlock()
		f()
	})
}

// Count is the hold count as this handle last saw it in Redis.
func (h *Hold) Count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds
}

// Token is the fencing token of the current hold, 0 if none.
func (h *Hold) Token() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token
}

// Done is closed when the current hold ends; closed when there is none.
func (h *Hold) Done() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.done
}

// Err is nil while held, matches ErrLockLost after a loss, and is
// ErrNotHeld otherwise.
func (h *Hold) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// onLost is the watchdog's callback for hold l.
func (h *Hold) onLost(l *watchdog.Lease, cause error) {
	err := errs.ErrLockLost
	if !errors.Is(cause, watchdog.ErrLost) {
		err = cause // the Client was closed: matches ErrLockLost and ErrClosed
	}
	h.end(l, err, true)
}

// end ends hold l (if it is still current) with the given reason.
func (h *Hold) end(l *watchdog.Lease, reason error, lost bool) {
	h.mu.Lock()
	if h.renewal != l || l == nil {
		h.mu.Unlock()
		return
	}
	h.ended = h.token
	h.renewal, h.holds, h.token, h.err, h.lost = nil, 0, 0, reason, lost
	close(h.done)
	held := time.Since(h.since)
	h.mu.Unlock()
	h.cfg.Engine.Observe(Ended(h.cfg.Observed, held, reason))
}

// Ended is the event for a hold of target that lasted held and ended for
// reason: Released after a release (reason ErrNotHeld), Lost otherwise.
func Ended(target obs.Target, held time.Duration, reason error) obs.Event {
	ev := obs.Event{Kind: obs.Lost, Primitive: target.Primitive, Name: target.Name, Held: held, Err: reason}
	if errors.Is(reason, errs.ErrNotHeld) {
		ev.Kind, ev.Err = obs.Released, nil
	}
	return ev
}

// LostReason is what a hold found lost by a failed watchdog.Remove reports:
// ErrLockLost, joined with ErrClosed when the Client was closed.
func LostReason(e *engine.Engine) error {
	if e.IsClosed() {
		return errs.LostOnClose
	}
	return errs.ErrLockLost
}

// Member describes a lock handle whose hold can be taken together with
// others of the same Client in one script (rlock.Mutex): see AttemptAll.
type Member struct {
	Engine  *engine.Engine
	Hold    *Hold
	Request scripts.LockRequest
	// Gate is the handle's gate (nil when it has none): a multilock that
	// takes the hold with one script enters it as the handle's own Lock
	// would, so that goroutines locking the handle directly still wait.
	Gate *Gate
	// Usable is false when the handle's name cannot be used on this
	// deployment (its methods report why).
	Usable bool
}

var describers []func(any) (*Member, bool)

// RegisterMember is called from a lock package's init with a function that
// recognises its handles.
func RegisterMember(describe func(any) (*Member, bool)) { describers = append(describers, describe) }

// MemberOf describes l if a registered lock package recognises it.
func MemberOf(l any) (*Member, bool) {
	for _, d := range describers {
		if m, ok := d(l); ok {
			return m, true
		}
	}
	return nil, false
}
