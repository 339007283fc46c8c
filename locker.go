package redisync

import (
	"context"
	"errors"
	"time"

	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
)

// UndoWait bounds how long a call whose ctx has ended keeps waiting for
// Redis: a cancelled Lock, Acquire or Await (of every primitive) returns
// within UndoWait of its ctx's end, and so does Do. Within that bound the
// call's undo has landed when it returns — a grant given back, a queue
// left, permits returned, so that a TryLock or TryAcquire right after it
// sees the name as it was. When the server does not answer within it (a
// stall, a cut network), the call returns and a Client task finishes the
// undo: it sends it again until the server answers, for as long as the
// undo can matter (the lease, a queue's waiter timeout), and Client.Close
// gives it up (see CloseTimeout); until then the name may show held or the
// request queued.
const UndoWait = 250 * time.Millisecond

// CloseTimeout bounds how long Client.Close waits for the Client's tasks:
// releases whose callers stopped waiting (Unlock, Release with a ctx that
// ended first) and undos of cancelled calls.
const CloseTimeout = 2 * time.Second

// Locker is the hold surface every primitive of redisync offers:
// rlock.Mutex, fairlock.Mutex, rwlock.RWMutex (its write side) and its
// ReadLocker and WriteLocker, multilock.Mutex, redlock.Mutex, and
// semaphore.Semaphore.Locker(n) for n permits. Any Locker can be run under
// with Do and combined with others by multilock.
//
// One handle is one owner. Goroutines that share a handle exclude each
// other as they would around a sync.Mutex (a Lock on a held handle waits
// for its Unlock), unless the handle was made reentrant; see each package's
// Ownership section.
type Locker interface {
	// Lock blocks until the lock is held or ctx ends. It returns nil,
	// ctx.Err() (unwrapped), or an error from Redis.
	Lock(ctx context.Context) error
	// TryLock makes exactly one attempt; (false, nil) means busy.
	TryLock(ctx context.Context) (bool, error)
	// Unlock releases one hold; ErrNotHeld if this owner does not hold it.
	// The hold ends locally at once and the release is sent whatever ctx
	// says: ctx bounds only the wait for the reply (ctx.Err() when it ends
	// first; the release then completes in the background, and
	// Client.Close waits for it, for at most CloseTimeout).
	Unlock(ctx context.Context) error
	// Token is the fencing token of the current hold, 0 if none.
	Token() uint64
	// Done is closed when the current hold ends (unlock or loss).
	Done() <-chan struct{}
	// Err is nil while held, ErrLockLost after a loss, ErrNotHeld otherwise.
	Err() error
}

// Do locks l, runs fn, and unlocks. fn's context is cancelled the moment the
// lock is lost, with context.Cause = ErrLockLost, so fn can stop writing
// before another holder starts. Unlock runs even if ctx ends meanwhile, and
// even if fn panics: the lock is released, then the panic continues up the
// caller's stack.
//
// Do waits for Unlock's reply while ctx lives, and for at most UndoWait
// after ctx has ended: so a Do whose ctx ends returns within UndoWait of
// that end (plus what fn itself takes), even when the server stalls. A
// release whose reply has not come by then completes in the background,
// as Unlock's does (Client.Close waits for it), and Do reports ctx.Err()
// for it.
//
// Do returns Lock's error if the lock was never taken; otherwise fn's error
// joined with Unlock's (ErrLockLost if the hold was lost) on one line, each
// reachable with errors.Is.
func Do(ctx context.Context, l Locker, fn func(ctx context.Context) error) error {
	if err := l.Lock(ctx); err != nil {
		return err
	}
	done := l.Done()
	fnCtx, cancel := context.WithCancelCause(ctx)
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		select {
		case <-done:
			cancel(l.Err()) // ErrLockLost after a loss
		case <-fnCtx.Done():
		}
	}()
	unlock := func() error {
		cancel(nil)
		<-watcher
		uctx, ucancel := engine.Linger(ctx, UndoWait)
		defer ucancel()
		err := l.Unlock(uctx)
		if uerr := uctx.Err(); uerr != nil && errors.Is(err, uerr) && ctx.Err() != nil {
			return ctx.Err() // the wait ended UndoWait after ctx: the release goes on
		}
		return err
	}
	// Deferred, so that a panicking fn does not leave the lock held
	// (renewed until the Client closes). The panic goes on after it.
	released := false
	defer func() {
		if !released {
			_ = unlock()
		}
	}()
	ferr := fn(fnCtx)
	released = true
	return errs.Join(ferr, unlock())
}
