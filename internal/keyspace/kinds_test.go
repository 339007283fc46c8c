package keyspace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// kind is a primitive, with a side for the read-write lock.
type kind uint8

const (
	kRLock kind = iota
	kFair
	kRead
	kWrite
	kSem
	kRedlock
	kLatch
	kRate
	nKinds
)

func (k kind) String() string {
	return [...]string{"rlock", "fairlock", "rwlock-read", "rwlock-write", "semaphore", "redlock", "latch", "ratelimit"}[k]
}

// handle is one owner of one primitive on one name, driven through the
// operations every kind has.
type handle struct {
	kind kind
	name string
	// try makes one attempt: (true, nil) held, (false, nil) busy.
	try func(ctx context.Context) (bool, error)
	// release undoes a successful try.
	release func(ctx context.Context) error
	// force is the kind's operator action (force-unlock, force-release);
	// nil for redlock, which has none.
	force func(ctx context.Context) error
	// inspect runs the kind's read-only queries.
	inspect func(ctx context.Context) error
	// keys is every key the library may create or change for this handle.
	keys []string
	// holders reports the lock's holders (lock kinds only, else nil), and
	// owner and mode are how this handle's hold shows there.
	holders     func(ctx context.Context) ([]redisync.Holder, error)
	owner, mode string
}

// spec is what a handle is made with beyond its kind and name.
type spec struct {
	owner    string // WithOwner for the lock kinds ("": the drawn owner id); ignored by the others
	redisson bool   // fairlock: WithRedissonQueue
}

func derived(prefix, name string) string {
	k, _ := keys.Derived(prefix, name)
	return k
}

// newHandle returns a handle of kind k on name, on Client c.
func newHandle(c *redisync.Client, k kind, name string) *handle {
	return newHandleWith(c, k, name, spec{})
}

// newHandleWith returns a handle of kind k on name, on Client c, made as sp
// says.
func newHandleWith(c *redisync.Client, k kind, name string, sp spec) *handle {
	h := &handle{kind: k, name: name}
	token := derived(keys.LockTokenPrefix, name)
	info := derived(keys.HolderInfoPrefix, name) // holder metadata (issue 14)
	switch k {
	case kRLock:
		var opts []rlock.Option
		if sp.owner != "" {
			opts = append(opts, rlock.WithOwner(sp.owner))
		}
		m := rlock.New(c, name, opts...)
		h.try, h.release = m.TryLock, m.Unlock
		h.holders, h.owner = m.Holders, m.Owner()
		h.force = func(ctx context.Context) error { _, err := rlock.New(c, name).ForceUnlock(ctx); return err }
		h.inspect = func(ctx context.Context) error {
			_, err1 := m.IsLocked(ctx)
			_, err2 := m.HoldCount(ctx)
			_, err3 := m.TTL(ctx)
			_, err4 := m.Holders(ctx)
			return errors.Join(err1, err2, err3, err4)
		}
		h.keys = []string{name, token, info}
	case kFair:
		var opts []fairlock.Option
		if sp.owner != "" {
			opts = append(opts, fairlock.WithOwner(sp.owner))
		}
		if sp.redisson {
			opts = append(opts, fairlock.WithRedissonQueue(0))
		}
		m := fairlock.New(c, name, opts...)
		h.try, h.release = m.TryLock, m.Unlock
		h.holders, h.owner = m.Holders, m.Owner()
		h.force = func(ctx context.Context) error { _, err := fairlock.New(c, name).ForceUnlock(ctx); return err }
		h.inspect = func(ctx context.Context) error {
			_, err1 := m.HoldCount(ctx)
			_, err2 := m.Queue(ctx)
			_, err3 := m.Holders(ctx)
			return errors.Join(err1, err2, err3)
		}
		h.keys = []string{name, token, derived(keys.FairQueuePrefix, name), derived(keys.FairHeartbeatPrefix, name), info}
		if sp.redisson {
			h.keys = []string{name, token, derived(keys.FairRedissonQueuePrefix, name), derived(keys.FairRedissonTimeoutPrefix, name), info}
		}
	case kRead, kWrite:
		var opts []rwlock.Option
		if sp.owner != "" {
			opts = append(opts, rwlock.WithOwner(sp.owner))
		}
		rw := rwlock.New(c, name, opts...)
		h.holders, h.owner = rw.Holders, rw.Owner()
		if k == kRead {
			h.try, h.release, h.mode = rw.TryRLock, rw.RUnlock, "read"
		} else {
			h.try, h.release, h.mode = rw.TryLock, rw.Unlock, "write"
		}
		h.force = func(ctx context.Context) error { _, err := rwlock.New(c, name).ForceUnlock(ctx); return err }
		h.inspect = func(ctx context.Context) error {
			_, err1 := rw.IsLocked(ctx)
			_, err2 := rw.HoldCount(ctx)
			_, err3 := rw.TTL(ctx)
			_, err4 := rw.Holders(ctx)
			return errors.Join(err1, err2, err3, err4)
		}
		h.keys = []string{name, token, derived(keys.RWWritersPrefix, name), derived(keys.RWTokenPrefix, name),
			keys.Tagged(name) + ":" + rw.Owner() + ":rwlock_timeout:1", info}
	case kSem:
		s := semaphore.New(c, name, 1)
		var p *semaphore.Permit
		h.try = func(ctx context.Context) (bool, error) {
			got, ok, err := s.TryAcquire(ctx, 1)
			if ok {
				p = got
			}
			return ok, err
		}
		h.release = func(ctx context.Context) error {
			if p == nil {
				return fmt.Errorf("semaphore %q: release without a permit", name)
			}
			return p.Release(ctx)
		}
		h.force = func(ctx context.Context) error { _, err := semaphore.New(c, name, 1).ForceUnlock(ctx); return err }
		h.inspect = func(ctx context.Context) error {
			_, err1 := s.Capacity(ctx)
			_, err2 := s.Available(ctx)
			_, err3 := s.Holders(ctx)
			_, err4 := s.Waiting(ctx)
			return errors.Join(err1, err2, err3, err4)
		}
		h.keys = []string{name, derived(keys.SemHoldersPrefix, name), derived(keys.SemPermitsPrefix, name),
			derived(keys.SemQueuePrefix, name), derived(keys.SemHeartbeatPrefix, name), info}
	case kRedlock:
		m := redlock.New([]*redisync.Client{c}, name)
		h.try, h.release = m.TryLock, m.Unlock
		h.inspect = func(ctx context.Context) error { _, err := m.Holders(ctx); return err }
		h.keys = []string{name, derived(keys.RedlockTokenPrefix, name), info}
	case kLatch:
		// A latch is no lock, but it lives at the raw name too: "held"
		// is a count this handle set (TrySetCount refuses an existing
		// latch), released by counting it down to zero (which deletes it).
		l := latch.New(c, name)
		h.try = func(ctx context.Context) (bool, error) { return l.TrySetCount(ctx, 1) }
		h.release = l.CountDown
		h.force = func(ctx context.Context) error { _, err := l.Delete(ctx); return err }
		h.inspect = func(ctx context.Context) error { _, err := l.Count(ctx); return err }
		h.keys = []string{name}
	case kRate:
		// A rate limiter named name, asked about the identity name: "held"
		// is its one event of the hour admitted, released by a Reset. Its
		// key is its own (keys.Rate), so it meets no other kind on a name.
		l := ratelimit.New(c, name, ratelimit.Every(time.Hour), 1)
		h.try = func(ctx context.Context) (bool, error) {
			res, err := l.Allow(ctx, name)
			return res.Allowed == 1, err
		}
		h.release = func(ctx context.Context) error { return l.Reset(ctx, name) }
		h.force = func(ctx context.Context) error {
			return ratelimit.New(c, name, ratelimit.Every(time.Hour), 1).Reset(ctx, name)
		}
		h.inspect = func(context.Context) error { return nil } // a limiter has no read-only query
		h.keys = []string{keys.Rate(name, name)}
	}
	return h
}

// shares reports whether two holds of kinds a and b on one name may be
// held together: only read holds share, and a rate limiter's key is apart
// from every lock's.
func shares(a, b kind) bool {
	return a == kRead && b == kRead || (a == kRate) != (b == kRate)
}
