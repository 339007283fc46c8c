package hold

import "context"

// opLock serializes a handle's round trips (see Hold.op). It is a mutex
// whose Lock can give up when a ctx ends: the holder may be a Client task
// finishing the undo of an earlier attempt against a server that does not
// answer, for up to the settle bound, and a caller's Lock must not outlive
// its own ctx waiting for that.
type opLock chan struct{}

func newOpLock() opLock { return make(opLock, 1) }

// Lock waits as long as it takes (releases and undos, which must happen).
func (l opLock) Lock() { l <- struct{}{} }

// LockCtx waits until the lock is free or ctx ends (then ctx.Err()). A ctx
// already done still takes a free lock: callers check ctx themselves.
func (l opLock) LockCtx(ctx context.Context) error {
	select {
	case l <- struct{}{}:
		return nil
	default:
	}
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryLock takes the lock only if it is free.
func (l opLock) TryLock() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

func (l opLock) Unlock() { <-l }

// OpLock is the op lock for whatever else takes turns with waits bounded
// by ctx in the same way: a multilock's rounds and releases above its
// components' holds, the Client's eviction check's looks at the nodes.
type OpLock = opLock

// NewOpLock returns a free OpLock.
func NewOpLock() OpLock { return newOpLock() }
