package rwlock

import (
	"errors"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/hold"
)

// The hold surface every lock kind shares (Token, Done, Err) for the
// RWMutex as a whole. With Lock, TryLock and Unlock it makes the RWMutex a
// redisync.Locker for its write side, so redisync.Do(ctx, rw, fn) runs fn
// under the write lock; ReadLocker and WriteLocker give each side on its
// own.
//
// Token, Done and Err describe the strongest hold the handle has: the write
// hold while it writes, else its read holds while it reads. A handle that
// holds both (a reentrant writer that took read holds) reports the write
// hold until its last Unlock; after that downgrade they report the read
// holds, whose Token is the write's (the read phase a downgrade leaves
// carries the write's token, see the package doc) and whose Done closes
// when the last RUnlock ends them. A handle that holds neither reports the
// side whose last hold was lost, if any (write first), so that a loss is
// never hidden by the other side's ErrNotHeld, and ErrNotHeld otherwise.

// Token returns the fencing token of the handle's current hold: the write
// hold's while it writes, else its read holds' (the token of the read phase
// they joined), 0 when it holds neither.
func (rw *RWMutex) Token() uint64 { return rw.current().Token() }

// Done returns a channel that is closed when the handle's current hold
// ends: the write hold while it writes, else its read holds (the last of
// them); closed when it holds neither. After a downgrade call Done again to
// follow the read holds.
func (rw *RWMutex) Done() <-chan struct{} { return rw.current().Done() }

// Err returns nil while the handle holds the write lock or a read hold, an
// error matching redisync.ErrLockLost when it holds neither and its last
// hold was lost, and redisync.ErrNotHeld otherwise.
func (rw *RWMutex) Err() error { return rw.current().Err() }

// current is the hold Token, Done and Err describe: the write side while
// held, else the read side while held, else the side whose last hold was
// lost (write first), else the write side (not held).
func (rw *RWMutex) current() *hold.Hold {
	w, r := rw.write.Err(), rw.read.Err()
	switch {
	case w == nil:
		return rw.write
	case r == nil:
		return rw.read
	case errors.Is(w, redisync.ErrLockLost):
		return rw.write
	case errors.Is(r, redisync.ErrLockLost):
		return rw.read
	}
	return rw.write
}

// An RWMutex is a redisync.Locker (for its write side).
var _ redisync.Locker = (*RWMutex)(nil)
