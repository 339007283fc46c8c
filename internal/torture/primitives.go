package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Primitives the harness drives. Each maps to a contender below.
var Primitives = []string{"rlock", "fairlock", "rwlock", "semaphore", "multilock", "redlock"}

// Hold modes, which decide what may overlap: an exclusive hold overlaps
// nothing, read holds overlap only read holds, and at most Config.Permits
// permit holds of one name overlap.
const (
	modeExclusive = "exclusive"
	modeRead      = "read"
	modePermit    = "permit"
)

// A contender is how one worker takes one kind of lock. Each worker has its
// own, over its own Client(s), as a separate process would.
type contender interface {
	// acquire takes a hold on one or more of the run's names, picked with
	// rng, blocking until it holds or ctx ends.
	acquire(ctx context.Context, rng *rand.Rand) (*grant, error)
}

// grant is one acquisition as its worker holds it.
type grant struct {
	names   []string // the names it holds (two for a multilock)
	id      string   // a semaphore permit's id
	tokens  []uint64 // the fencing token checked at each name's resource
	mode    string
	done    <-chan struct{}
	err     func() error
	release func(context.Context) error
	// leftover, after a failed acquire, counts components still held in
	// Redis (a multilock's all-or-nothing promise); nil when not applicable.
	leftover func(context.Context) (int, error)
}

// newContender returns worker w's contender for cfg.Primitive. clients are
// the worker's Clients: one, or one per node for redlock.
func newContender(cfg *Config, clients []*redisync.Client, names []string) contender {
	fixed := cfg.Scenario == "holder-pause" // a paused process renews nothing
	sharedOwner := cfg.Scenario == "shared-owner"
	switch cfg.Primitive {
	case "fairlock":
		var opts []fairlock.Option
		if fixed {
			opts = append(opts, fairlock.WithLease(cfg.Lease))
		}
		// A dead waiter holds the queue up for a lease at most.
		opts = append(opts, fairlock.WithWaiterTimeout(cfg.Lease))
		return fairContender{c: clients[0], names: names, opts: opts,
			shared: sharedHandles[*fairlock.Mutex](cfg), sharedOwner: sharedOwner}
	case "rwlock":
		var opts []rwlock.Option
		if fixed {
			opts = append(opts, rwlock.WithLease(cfg.Lease))
		}
		opts = append(opts, rwlock.WithWriterPreference(), rwlock.WithWaiterTimeout(cfg.Lease))
		return rwContender{c: clients[0], names: names, opts: opts,
			shared: sharedHandles[*rwlock.RWMutex](cfg), sharedOwner: sharedOwner}
	case "semaphore":
		var opts []semaphore.Option
		if fixed {
			opts = append(opts, semaphore.WithLease(cfg.Lease))
		}
		opts = append(opts, semaphore.WithWaiterTimeout(cfg.Lease))
		return semContender{c: clients[0], names: names, permits: cfg.Permits, opts: opts}
	case "multilock":
		return &multiContender{c: clients[0], names: names, fixed: fixed, lease: cfg.Lease,
			shared: sharedHandles[*multilock.Mutex](cfg)}
	case "redlock":
		var opts []redlock.Option
		if fixed {
			opts = append(opts, redlock.WithLease(cfg.Lease))
		}
		return redlockContender{clients: clients, names: names, opts: opts, shared: sharedHandles[*redlock.Mutex](cfg)}
	}
	var opts []rlock.Option
	if fixed {
		opts = append(opts, rlock.WithLease(cfg.Lease))
	}
	return rlockContender{c: clients[0], names: names, opts: opts,
		shared: sharedHandles[*rlock.Mutex](cfg), sharedOwner: sharedOwner}
}

// exclusiveGrant wraps a held redisync.Locker on one name.
func exclusiveGrant(name string, l redisync.Locker) *grant {
	return &grant{names: []string{name}, tokens: []uint64{l.Token()}, mode: modeExclusive,
		done: l.Done(), err: l.Err, release: l.Unlock}
}

type rlockContender struct {
	c           *redisync.Client
	names       []string
	opts        []rlock.Option
	shared      *handles[*rlock.Mutex]
	sharedOwner bool
}

func (k rlockContender) acquire(ctx context.Context, rng *rand.Rand) (*grant, error) {
	name := k.names[rng.IntN(len(k.names))]
	if k.sharedOwner {
		opts := append(slices.Clip(k.opts), rlock.WithOwner(sharedOwnerID(rng)))
		return sharedOwnerGrant(ctx, rng.IntN(2) == 0, name, rlock.New(k.c, name, opts...), rlock.New(k.c, name, opts...))
	}
	m := k.shared.get(name, func() *rlock.Mutex { return rlock.New(k.c, name, k.opts...) })
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return exclusiveGrant(name, m), nil
}

type fairContender struct {
	c           *redisync.Client
	names       []string
	opts        []fairlock.Option
	shared      *handles[*fairlock.Mutex]
	sharedOwner bool
}

func (k fairContender) acquire(ctx context.Context, rng *rand.Rand) (*grant, error) {
	name := k.names[rng.IntN(len(k.names))]
	if k.sharedOwner {
		opts := append(slices.Clip(k.opts), fairlock.WithOwner(sharedOwnerID(rng)))
		return sharedOwnerGrant(ctx, rng.IntN(2) == 0, name, fairlock.New(k.c, name, opts...), fairlock.New(k.c, name, opts...))
	}
	m := k.shared.get(name, func() *fairlock.Mutex { return fairlock.New(k.c, name, k.opts...) })
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return exclusiveGrant(name, m), nil
}

// rwContender takes the write lock one time in three (writers update the
// resource), read holds otherwise (readers only look).
type rwContender struct {
	c           *redisync.Client
	names       []string
	opts        []rwlock.Option
	shared      *handles[*rwlock.RWMutex]
	sharedOwner bool
}

func (k rwContender) acquire(ctx context.Context, rng *rand.Rand) (*grant, error) {
	name := k.names[rng.IntN(len(k.names))]
	if k.sharedOwner { // the write side: a nested exclusive hold
		opts := append(slices.Clip(k.opts), rwlock.WithOwner(sharedOwnerID(rng)))
		a, b := rwlock.New(k.c, name, opts...), rwlock.New(k.c, name, opts...)
		return sharedOwnerGrant(ctx, rng.IntN(2) == 0, name, a.WriteLocker(), b.WriteLocker())
	}
	rw := k.shared.get(name, func() *rwlock.RWMutex { return rwlock.New(k.c, name, k.opts...) })
	if rng.IntN(3) == 0 {
		if err := rw.Lock(ctx); err != nil {
			return nil, err
		}
		return exclusiveGrant(name, rw.WriteLocker()), nil
	}
	if err := rw.RLock(ctx); err != nil {
		return nil, err
	}
	r := rw.ReadLocker()
	return &grant{names: []string{name}, tokens: []uint64{r.Token()}, mode: modeRead,
		done: r.Done(), err: r.Err, release: r.Unlock}, nil
}

// semContender takes one permit of a semaphore with Config.Permits permits.
type semContender struct {
	c       *redisync.Client
	names   []string
	permits int
	opts    []semaphore.Option
}

func (k semContender) acquire(ctx context.Context, rng *rand.Rand) (*grant, error) {
	name := k.names[rng.IntN(len(k.names))]
	p, err := semaphore.New(k.c, name, k.permits, k.opts...).Acquire(ctx, 1)
	if err != nil {
		return nil, err
	}
	return &grant{names: []string{name}, id: p.ID(), tokens: []uint64{p.Token()}, mode: modePermit,
		done: p.Done(), err: p.Err, release: p.Release}, nil
}

// multiContender locks two distinct names in a random order, so that two
// workers often ask for {A,B} and {B,A} at once.
type multiContender struct {
	c      *redisync.Client
	names  []string
	fixed  bool
	lease  time.Duration
	shared *handles[*multilock.Mutex] // by the pair's names, in order

	mu   sync.Mutex     // a shared-handle twin uses this contender too
	last []*rlock.Mutex // the components of the last attempt
}

func (k *multiContender) acquire(ctx context.Context, rng *rand.Rand) (*grant, error) {
	if len(k.names) < 2 {
		return nil, fmt.Errorf("multilock needs at least two names")
	}
	perm := rng.Perm(len(k.names))[:2]
	var opts []rlock.Option
	if k.fixed {
		opts = append(opts, rlock.WithLease(k.lease))
	}
	var parts []*rlock.Mutex
	ml := k.shared.get(k.names[perm[0]]+"\x00"+k.names[perm[1]], func() *multilock.Mutex {
		lockers := make([]redisync.Locker, 2)
		for i, j := range perm {
			lockers[i] = rlock.New(k.c, k.names[j], opts...)
		}
		return multilock.New(lockers...)
	})
	for _, l := range ml.Components() {
		parts = append(parts, l.(*rlock.Mutex))
	}
	k.mu.Lock()
	k.last = parts
	k.mu.Unlock()
	if err := ml.Lock(ctx); err != nil {
		return &grant{leftover: func(ctx context.Context) (int, error) { return held(ctx, parts) }}, err
	}
	g := &grant{mode: modeExclusive, done: ml.Done(), err: ml.Err, release: ml.Unlock}
	for _, m := range parts {
		g.names = append(g.names, m.Name())
		g.tokens = append(g.tokens, m.Token())
	}
	return g, nil
}

// held counts the components whose owner still holds their key in Redis.
func held(ctx context.Context, ms []*rlock.Mutex) (int, error) {
	n := 0
	for _, m := range ms {
		c, err := m.HoldCount(ctx)
		if err != nil {
			return 0, err
		}
		if c > 0 {
			n++
		}
	}
	return n, nil
}

type redlockContender struct {
	clients []*redisync.Client
	names   []string
	opts    []redlock.Option
	shared  *handles[*redlock.Mutex]
}

func (k redlockContender) acquire(ctx context.Context, rng *rand.Rand) (*grant, error) {
	name := k.names[rng.IntN(len(k.names))]
	m := k.shared.get(name, func() *redlock.Mutex { return redlock.New(k.clients, name, k.opts...) })
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return exclusiveGrant(name, m), nil
}

// handles keeps one lock handle per name for the shared-handle scenario,
// where a worker and its twin share them; nil (every other scenario) makes
// get build a fresh handle each time.
type handles[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// sharedHandles returns the handle cache cfg's scenario calls for, or nil.
func sharedHandles[T any](cfg *Config) *handles[T] {
	if cfg.Scenario != "shared-handle" {
		return nil
	}
	return &handles[T]{m: map[string]T{}}
}

// get returns the handle for name, made by build the first time.
func (h *handles[T]) get(name string, build func() T) T {
	if h == nil {
		return build()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[name]
	if !ok {
		v = build()
		h.m[name] = v
	}
	return v
}

// sharedOwnerID draws an owner id for one shared-owner hold.
func sharedOwnerID(rng *rand.Rand) string { return fmt.Sprintf("torture-shared-%016x", rng.Uint64()) }

// sharedOwnerGrant takes one nested hold through two handles a and b that
// share an owner id: a locks, b re-enters at once. Its release unlocks both,
// in either order (firstA), after which the lock must be free.
func sharedOwnerGrant(ctx context.Context, firstA bool, name string, a, b redisync.Locker) (*grant, error) {
	if err := a.Lock(ctx); err != nil {
		return nil, err
	}
	ok, err := b.TryLock(ctx)
	if err != nil || !ok {
		uerr := a.Unlock(context.WithoutCancel(ctx))
		if err == nil {
			err = fmt.Errorf("torture: a second handle of the owner could not re-enter %q", name)
		}
		return nil, errors.Join(err, uerr)
	}
	return &grant{names: []string{name}, tokens: []uint64{a.Token()}, mode: modeExclusive,
		done: a.Done(), err: a.Err, release: func(ctx context.Context) error {
			if firstA {
				return errors.Join(a.Unlock(ctx), b.Unlock(ctx))
			}
			return errors.Join(b.Unlock(ctx), a.Unlock(ctx))
		}}, nil
}
