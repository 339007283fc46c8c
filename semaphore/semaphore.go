package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
)

// MaxNameLength is the longest semaphore name accepted, in bytes.
const MaxNameLength = 4096

// MaxPermits is the largest capacity and the largest count of one request.
// Counts are added up inside Lua scripts, whose numbers are doubles: exact
// only up to 2^53, and formatted as "1e+17" from 10^17 on. Two counts of
// MaxPermits still add up exactly, and no real pool comes near it.
const MaxPermits = 1_000_000_000_000_000

var (
	// ErrBadCount is returned before any I/O for a permit count below 1 or
	// above MaxPermits, and for a capacity below 0 or above MaxPermits.
	ErrBadCount = errors.New("semaphore: permit count out of range")
	// ErrTooMany is returned at once when more permits are requested than
	// the semaphore's capacity in Redis: such a request could never be
	// granted (unless SetPermits raised the capacity first).
	ErrTooMany = errors.New("semaphore: more permits requested than the capacity")
)

// Semaphore is a distributed counting semaphore of leased permits. It is
// cheap to create and safe for concurrent use; each Acquire returns its own
// Permit. See the package doc.
type Semaphore struct {
	e             *engine.Engine
	name          string
	nameErr       error
	capErr        error // the capacity New was given is above MaxPermits
	keys          scripts.SemKeys
	waiterPrefix  string // keys.WaiterPrefix(), made once
	capacity      string // the capacity New was given, set on first use
	lease         time.Duration
	fixed         bool
	leaseMs       string
	horizonMs     string // scripts.SemHorizonMs(leaseMs), made once
	waiterTimeout time.Duration
	waitMs        string
}

// New returns the semaphore named name on c with the given capacity. It
// does no I/O: the capacity is stored in Redis by the first call that finds
// none there, and from then on Redis's value wins (SetPermits changes it).
// A name that cannot be used (empty, longer than MaxNameLength, or unusable
// on a Cluster) makes every method return redisync.ErrInvalidName without
// I/O; a capacity above MaxPermits (often configuration, so data) makes
// every method return ErrBadCount without I/O, and a WithLease below
// redisync.MinLease redisync.ErrInvalidLease. New panics if c is nil,
// permits is below 1, or another option is out of range.
func New(c *redisync.Client, name string, permits int, opts ...Option) *Semaphore {
	e := engine.FromClient(c)
	nameErr := lockopt.CheckName("semaphore", e, name)
	if permits < 1 {
		panic(fmt.Sprintf("semaphore: capacity %d is below 1", permits))
	}
	var capErr error
	if permits > MaxPermits {
		capErr = fmt.Errorf("semaphore %q: capacity %d is above MaxPermits (%d): %w", name, permits, MaxPermits, ErrBadCount)
	}
	var o lockopt.Options
	for _, opt := range opts {
		opt(&o)
	}
	o.Validate("semaphore")
	if nameErr == nil {
		nameErr = o.LeaseErr("semaphore", name) // a lease is often configuration: an error, not a panic
	}
	_, lease, fixed := o.Resolve(e)
	derive := func(prefix string) string { k, _ := keys.Derived(prefix, name); return k }
	info, holder := e.HolderInfo(name)
	s := &Semaphore{
		e: e, name: name, nameErr: nameErr, capErr: capErr,
		capacity: strconv.Itoa(permits),
		lease:    lease, fixed: fixed, leaseMs: engine.Millis(lease),
		horizonMs:     scripts.SemHorizonMs(engine.Millis(lease)),
		waiterTimeout: o.WaiterTimeout, waitMs: engine.Millis(o.WaiterTimeout),
		keys: scripts.SemKeys{
			Sem:        name,
			Holders:    derive(keys.SemHoldersPrefix),
			Permits:    derive(keys.SemPermitsPrefix),
			Queue:      derive(keys.SemQueuePrefix),
			Heartbeats: derive(keys.SemHeartbeatPrefix),
			Channel:    derive(keys.SemChannelPrefix),
			Info:       info,
			Holder:     holder,
		},
	}
	s.waiterPrefix = s.keys.WaiterPrefix()
	return s
}

func (s *Semaphore) observed() obs.Target { return obs.Target{Primitive: "semaphore", Name: s.name} }

// Name returns the semaphore's name (the key of its hash).
func (s *Semaphore) Name() string { return s.name }

// Acquire blocks until n permits are held together, or ctx ends. Requests
// are served in arrival order (see the package doc). It returns the Permit,
// or nil and: ctx.Err() unwrapped when ctx ends (within redisync.UndoWait
// of its end; nothing is held and the request has left the queue, unless
// the server did not answer within that bound: see the package doc),
// ErrBadCount, ErrTooMany, redisync.ErrClosed, or an error from Redis.
// Acquire panics on a nil ctx.
func (s *Semaphore) Acquire(ctx context.Context, n int) (*Permit, error) {
	if err := s.check(ctx, n); err != nil {
		return nil, err
	}
	p := s.newPermit(n, s.waitMs, true)
	err := s.e.Acquire(ctx, p.channel, s.observed(), func(ctx context.Context) (bool, time.Duration, error) {
		ok, hint, err := p.attempt(ctx)
		if heartbeat := s.waiterTimeout / 3; !ok && err == nil && (hint <= 0 || hint > heartbeat) {
			hint = heartbeat
		}
		return ok, hint, err
	})
	if err != nil {
		// Leave the queue after the last acquire is settled: one still in
		// flight (ctx ended first) would otherwise queue the request again.
		p.hold.AfterOps(func() { s.leave(ctx, p.id) })
		return nil, err
	}
	return p, nil
}

// TryAcquire makes exactly one attempt and never queues: it succeeds only
// when n permits are free and nobody is waiting (so it never overtakes a
// queued request). (nil, false, nil) means not now.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) (*Permit, bool, error) {
	if err := s.check(ctx, n); err != nil {
		return nil, false, err
	}
	p := s.newPermit(n, "0", false)
	ok, err := s.e.TryOnce(ctx, s.observed(), p.attempt)
	if !ok || err != nil {
		return nil, false, err
	}
	return p, true, nil
}

// Available returns how many permits are free now: capacity minus the
// permits held (never below 0; after SetPermits lowered the capacity,
// holders may hold more than it). Expired holders' permits are taken back
// first.
func (s *Semaphore) Available(ctx context.Context) (int, error) {
	st, err := s.state(ctx, "", false)
	if err != nil {
		return 0, err
	}
	return int(max(0, st.Capacity-st.Used)), nil
}

// Capacity returns the capacity stored in Redis (setting it from New's
// argument if none is there yet).
func (s *Semaphore) Capacity(ctx context.Context) (int, error) {
	st, err := s.state(ctx, "", false)
	return int(st.Capacity), err
}

// SetPermits changes the capacity to n (n >= 0). Raising it wakes waiters at
// once. Lowering it revokes nothing: current holders keep their permits
// until they release them or their leases run out, and new requests wait
// until the permits held drop below the new capacity (requests for more than
// it fail with ErrTooMany).
func (s *Semaphore) SetPermits(ctx context.Context, n int) error {
	if n < 0 || n > MaxPermits {
		return fmt.Errorf("semaphore %q: SetPermits(%d) outside 0..MaxPermits (%d): %w", s.name, n, MaxPermits, ErrBadCount)
	}
	_, err := s.state(ctx, strconv.Itoa(n), false)
	return err
}

// Waiting returns how many Acquire calls are queued.
func (s *Semaphore) Waiting(ctx context.Context) (int, error) {
	st, err := s.state(ctx, "", false)
	return int(st.Queued), err
}

func (s *Semaphore) state(ctx context.Context, set string, holders bool) (scripts.SemState, error) {
	if err := lockopt.Check("semaphore", s.e, s.nameErr, ctx); err != nil {
		return scripts.SemState{}, err
	}
	if s.capErr != nil {
		return scripts.SemState{}, s.capErr
	}
	st, err := scripts.SemReadState(ctx, s.e.RC, &s.keys, s.capacity, set, s.e.Publish, holders)
	doing := "semaphore: reading the state"
	if set != "" {
		doing = "semaphore: setting the capacity"
	}
	return st, engine.WrapIO(doing, s.name, err) // one line naming the semaphore
}

func (s *Semaphore) check(ctx context.Context, n int) error {
	if err := lockopt.Check("semaphore", s.e, s.nameErr, ctx); err != nil {
		return err
	}
	return s.refusal(n)
}

// refusal is the error of a request for n permits that no I/O changes:
// the name, the lease, the capacity or n refused; nil when there is none.
func (s *Semaphore) refusal(n int) error {
	if s.nameErr != nil {
		return s.nameErr
	}
	if s.capErr != nil {
		return s.capErr
	}
	if n < 1 || n > MaxPermits {
		return fmt.Errorf("semaphore %q: %d permits requested, outside 1..MaxPermits (%d): %w", s.name, n, MaxPermits, ErrBadCount)
	}
	return nil
}

// leave takes a failed or cancelled Acquire out of the queue. A leave the
// server does not answer is sent again (engine.Persist) until the place
// would have lapsed anyway (the waiter timeout); leaving is idempotent, and
// the one more send after the first answer takes out a place that an
// attempt on a dropped connection put back after the leave overtook it.
func (s *Semaphore) leave(ctx context.Context, id string) {
	s.e.Persist(ctx, time.Now().Add(s.waiterTimeout), true, func(bctx context.Context) bool {
		_, err := scripts.QueueLeave(bctx, s.e.RC, s.keys.Queue, s.keys.Heartbeats, s.keys.Channel, id, s.e.Publish)
		return !engine.Resend(err)
	})
}
