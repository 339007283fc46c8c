package main

import (
	"context"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// holdable is what `run` and `sem run` hold while the command runs.
type holdable interface {
	acquire(ctx context.Context, wait time.Duration) (bool, error)
	release(ctx context.Context) error
	token() uint64
	done() <-chan struct{}
}

type lockHold struct{ l redisync.Locker }

func (h lockHold) acquire(ctx context.Context, wait time.Duration) (bool, error) {
	if wait == 0 {
		return h.l.TryLock(ctx)
	}
	return true, h.l.Lock(ctx)
}
func (h lockHold) release(ctx context.Context) error { return h.l.Unlock(ctx) }
func (h lockHold) token() uint64                     { return h.l.Token() }
func (h lockHold) done() <-chan struct{}             { return h.l.Done() }

type permitHold struct {
	sem *semaphore.Semaphore
	n   int
	p   *semaphore.Permit
}

func (h *permitHold) acquire(ctx context.Context, wait time.Duration) (bool, error) {
	var err error
	ok := true
	if wait == 0 {
		h.p, ok, err = h.sem.TryAcquire(ctx, h.n)
	} else {
		h.p, err = h.sem.Acquire(ctx, h.n)
	}
	return ok && err == nil, err
}
func (h *permitHold) release(ctx context.Context) error { return h.p.Release(ctx) }
func (h *permitHold) token() uint64                     { return h.p.Token() }
func (h *permitHold) done() <-chan struct{}             { return h.p.Done() }
