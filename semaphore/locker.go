package semaphore

import (
	"context"
	"fmt"
	"sync"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/lockopt"
)

// Locker returns a handle that acquires n permits of the semaphore as a
// redisync.Locker, so that permits can be used wherever a lock is expected:
// redisync.Do runs a function while holding them, and a multilock can hold
// them together with locks. Lock is Acquire(ctx, n), TryLock is
// TryAcquire(ctx, n), Unlock releases the permits, and Token, Done and Err
// are those of the Permit currently held (0, a closed channel and
// redisync.ErrNotHeld when none is; after a loss, Err matches
// redisync.ErrLockLost until the next Lock).
//
// The handle follows the ownership model of the lock handles: goroutines
// that share it exclude each other as they would around a sync.Mutex — a
// Lock on a handle that holds its permits waits for its Unlock (bounded by
// ctx), and TryLock then reports false without I/O. Each call to Locker
// returns a new handle, and different handles compete for permits like any
// other acquisitions: with capacity for both, two handles hold at once. An
// Unlock of a handle that holds nothing returns redisync.ErrNotHeld.
//
// Locker panics if n is below 1; a count above MaxPermits, like an unusable
// name, is reported by Lock and TryLock (ErrBadCount) without I/O.
func (s *Semaphore) Locker(n int) redisync.Locker {
	if n < 1 {
		panic(fmt.Sprintf("semaphore: Locker(%d): a count below 1", n))
	}
	return &permitLocker{s: s, n: n, gate: hold.NewGate(false, s.e.Closed())}
}

// permitLocker is the Locker that Semaphore.Locker returns.
type permitLocker struct {
	s    *Semaphore
	n    int
	gate *hold.Gate // the local wait every handle has (internal/hold)

	mu   sync.Mutex
	cur  *Permit // the Permit held, nil when none
	last *Permit // the Permit held last, for Err after it ended
}

// A multilock learns a Locker's refusal (the semaphore's, or its count's)
// before its first round.
func init() {
	lockopt.RegisterRefusal(func(l any) (error, bool) {
		p, ok := l.(*permitLocker)
		if !ok {
			return nil, false
		}
		return p.s.refusal(p.n), true
	})
}

// Name returns the semaphore's name; a multilock orders its components by
// it.
func (l *permitLocker) Name() string { return l.s.name }

// Lock acquires the handle's n permits; see Semaphore.Acquire for the
// errors. On a handle that holds them it first waits for its Unlock.
func (l *permitLocker) Lock(ctx context.Context) error {
	if ctx == nil {
		panic("semaphore: nil Context")
	}
	if err := l.gate.Enter(ctx); err != nil {
		return err
	}
	p, err := l.s.Acquire(ctx, l.n)
	l.gate.Acquired(err == nil)
	if err == nil {
		l.set(p)
	}
	return err
}

// TryLock makes one attempt at the handle's n permits (TryAcquire):
// (false, nil) when they are not free now, or when the handle holds them.
func (l *permitLocker) TryLock(ctx context.Context) (bool, error) {
	if ctx == nil {
		panic("semaphore: nil Context")
	}
	if err := lockopt.Check("semaphore", l.s.e, l.s.nameErr, ctx); err != nil {
		return false, err
	}
	if ok, err := l.gate.TryEnter(); !ok {
		return false, err
	}
	p, ok, err := l.s.TryAcquire(ctx, l.n)
	ok = ok && err == nil
	l.gate.Acquired(ok)
	if ok {
		l.set(p)
	}
	return ok, err
}

func (l *permitLocker) set(p *Permit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cur, l.last = p, p
}

// Unlock releases the permits held (Permit.Release: sent whatever ctx
// says, ctx bounds only the wait for the reply). It returns
// redisync.ErrNotHeld when the handle holds none, and an error matching
// redisync.ErrLockLost when they were lost.
func (l *permitLocker) Unlock(ctx context.Context) error {
	if ctx == nil {
		panic("semaphore: nil Context")
	}
	l.mu.Lock()
	p := l.cur
	l.cur = nil
	l.mu.Unlock()
	if p == nil {
		return redisync.ErrNotHeld
	}
	defer l.gate.Exit() // the hold has ended here, whatever the release reports
	return p.Release(ctx)
}

// Token returns the fencing token of the Permit held, 0 when none is (or
// it was lost), as every lock's Token.
func (l *permitLocker) Token() uint64 {
	if p := l.current(); p != nil && p.Err() == nil {
		return p.Token()
	}
	return 0
}

// Done returns a channel that is closed when the Permit held ends (release
// or loss); closed when none is held.
func (l *permitLocker) Done() <-chan struct{} {
	if p := l.current(); p != nil {
		return p.Done()
	}
	return hold.Closed
}

// Err returns nil while the permits are held, an error matching
// redisync.ErrLockLost when the last Permit was lost, and
// redisync.ErrNotHeld otherwise.
func (l *permitLocker) Err() error {
	l.mu.Lock()
	p, last := l.cur, l.last
	l.mu.Unlock()
	if p != nil {
		return p.Err()
	}
	if last != nil {
		return last.Err() // ErrLockLost if it was lost, ErrNotHeld after Release
	}
	return redisync.ErrNotHeld
}

func (l *permitLocker) current() *Permit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}
