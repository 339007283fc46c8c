package hold

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/watchdog"
)

// A job is one release that Unlock queued: it reaches Redis under op, in
// order, and stays queued until Redis has answered it.
type job struct {
	kind    jobKind
	last    bool            // it ends the handle's last hold
	token   uint64          // the hold's fencing token
	holds   int64           // kindAll: how many holds of this handle's the lost hold had
	renewal *watchdog.Lease // the hold it releases, still current when nested
	result  error           // kindAll: the loss it reports

	args  scripts.ReleaseArgs
	fixed bool // args are drawn (at the first send): every resend repeats them
	sends int

	// h, ctx and d are the Unlock's hold, context and the detached context
	// of its task (releaseTask).
	h   *Hold
	ctx context.Context
	d   *engine.Detached

	// done, when not nil, is closed when err is known; told reports that.
	done chan struct{}
	told bool
	err  error
}

type jobKind uint8

const (
	kindOne  jobKind = iota // one hold of this handle
	kindAll                 // whatever is left of this handle's lost hold
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
	j := &job{}
	h.mu.Lock()
	n, lost, renewal := h.holds, h.lost, h.renewal
	outer := len(h.unreported) > 0 // lost holds under this one await their Unlocks
	switch {
	case n == 0 && lost:
		h.lost = false
		j.kind, j.result, j.token, j.holds, j.last = kindAll, h.err, h.ended, h.endedHolds, !outer
	case n == 0 && len(h.queue) > 0 && h.queue[0].told:
		// An earlier Unlock was told an error and its release is still
		// queued: this one sees it through (and releases nothing more).
		j.kind = kindWait
	case n == 0 && outer:
		// The Unlock of a lost hold that this handle locked past.
		l := h.unreported[len(h.unreported)-1]
		h.unreported = h.unreported[:len(h.unreported)-1]
		j.kind, j.result, j.token, j.holds, j.last = kindAll, l.err, l.token, l.holds, len(h.unreported) == 0
	case n == 0:
		// The handle holds nothing of its own: its holds are over (their
		// releases done or under way), or it never held — also while its
		// first Lock is still in flight. The Unlock is turned away, as
		// sync.Mutex's would be, and never takes a hold that is not this
		// handle's, not even one of an owner id it shares.
		h.mu.Unlock()
		return errs.ErrNotHeld
	case n > 1 && h.cfg.LocalCount:
		h.holds-- // a nested hold Redis never saw
		h.mu.Unlock()
		return nil
	default:
		h.holds--
		j.kind, j.token, j.renewal, j.last = kindOne, h.token, renewal, n == 1 && !outer
	}
	var ended endedHold
	if j.kind == kindOne && n == 1 {
		// The last hold ends here, under mu with the count that drops to
		// zero: a grant that another goroutine sharing the handle gets
		// from now on starts a hold of its own instead of joining this
		// one, whose release is on its way.
		if h.cfg.Engine.Watchdog.Remove(renewal) {
			ended = h.endLocked(renewal, errs.ErrNotHeld, false)
		} else {
			// Lost while we were getting here. The watchdog's OnLost may
			// not have run yet: end the hold now (OnLost then finds it
			// ended), and remove whatever is left of it.
			ended = h.endLocked(renewal, LostReason(h.cfg.Engine), false)
			j.kind, j.result, j.token, j.holds = kindAll, h.err, h.ended, 1
		}
	}
	h.mu.Unlock()
	ended.observe(h)
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
		// Close waits for it, and gives it up, as for a task.
		h.cfg.Engine.Own(ctx, !h.cfg.OutlivesCtx, func(octx context.Context) {
			h.op.Lock()
			_ = h.drain(octx)
			h.op.Unlock()
		})
		h.mu.Lock()
		defer h.mu.Unlock()
		return j.err
	}
	j.done = make(chan struct{})
	h.mu.Lock()
	h.queue = append(h.queue, j)
	h.mu.Unlock()
	// The task's context outlives ctx by CompensateTimeout (engine.Detach);
	// this goroutine watches ctx for it while it waits below.
	d := h.cfg.Engine.DetachUnwatched(ctx, !h.cfg.OutlivesCtx)
	defer d.Release()
	j.h, j.ctx, j.d = h, ctx, d
	engine.Go1(h.cfg.Engine, releaseTask, j)
	if err := ctx.Err(); err != nil {
		d.Linger()
		return err // the hold has ended here; the release completes in the background
	}
	select {
	case <-j.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.queue) > 0 {
			d.Watch(ctx) // the task goes on with the releases queued after j
		}
		return j.err
	case <-ctx.Done():
		d.Linger()
		return ctx.Err()
	}
}

// releaseTask is the Client task of j's Unlock: it sees the handle's queue
// through, under op, on j's detached context.
func releaseTask(j *job) {
	h, ctx, d := j.h, j.ctx, j.d
	defer d.Stop()
	h.op.Lock()
	defer h.op.Unlock()
	if h.drain(d) == nil || ctx.Err() == nil || h.cfg.Engine.IsClosed() {
		return
	}
	// No reply, and the caller has gone: nobody reads a replica's
	// acknowledgement now, and a WAIT may be what held the release
	// back (behind a lagging replica its NOSCRIPT came back only when
	// the WAIT ended, after this task's bound, so the EVAL never went
	// out). Again without it, until the server answers or the lease
	// would have ended the hold anyway (a stalled server): the release
	// repeats the same request, so a send that did run is not applied
	// twice.
	h.cfg.Engine.Persist(ctx, time.Now().Add(h.cfg.Lease), false, func(rctx context.Context) bool {
		return !engine.Resend(h.drain(rctx))
	})
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
		if len(h.queue) == 1 {
			h.queue = h.queue[:0] // the next Unlock reuses the array
		} else {
			h.queue = h.queue[1:]
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
			// Only the lost hold's remains: never a later hold of the owner
			// (the token), and of an owner other handles share only this
			// handle's holds — their counts mix with ours in Redis, and
			// their holds live on by their own leases.
			j.args.Expected, j.args.Token = scripts.ReleaseAll, j.token
			if h.cfg.Shared {
				j.args.Expected, j.args.Holds = scripts.ReleaseAny, j.holds
			}
		default:
			j.args.Token = j.token
			h.mu.Lock()
			j.args.Expected = h.remote
			h.mu.Unlock()
			if h.cfg.Shared || j.args.Expected <= 0 {
				// Another handle may have changed the count: release one,
				// guarded by the token and the latch.
				j.args.Expected = scripts.ReleaseAny
			}
		}
		j.args.Latch = h.nextLatch()
		if j.renewal != nil {
			engine.AwaitRecord(ctx, j.renewal.Target)
		}
		j.args.Unrecorded = j.renewal != nil && !engine.IsRecorded(j.renewal.Target)
		if j.last && j.args.Latch.Field != "" && j.token > 0 {
			// The handle's last hold: its latch field goes with it, unless
			// no latched acquire of the hold wrote one (AttemptAll's), or
			// the handle holds again (an acquire in flight when its
			// Unlock ran granted a hold that its latch field records).
			h.mu.Lock()
			if h.holds == 0 {
				j.args.Last, h.marked = h.marked, false
			}
			h.mu.Unlock()
		}
	}
	j.sends++
	r, err := h.send(ctx, j.args)
	err = engine.Cause(ctx, err)
	if err != nil {
		if scripts.IsReply(err) {
			return h.wrap(err), true // an answer: the script did not run
		}
		return h.wrap(err), false
	}
	h.mu.Lock()
	h.remote = r.Count
	h.mu.Unlock()
	if j.kind == kindAll {
		return j.result, true
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
	backoff := engine.Backoff{Min: 10 * time.Millisecond, Max: 500 * time.Millisecond}
	for {
		r, err := h.release(ctx, args)
		if err == nil || !engine.Transient(err) || ctx.Err() != nil || h.cfg.Engine.IsClosed() {
			return r, err
		}
		wait := backoff.Next()
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
	}
}

// wrap says which release failed.
func (h *Hold) wrap(err error) error {
	return engine.WrapIO(h.cfg.Observed.Primitive+": release", h.cfg.Observed.Name, err)
}
