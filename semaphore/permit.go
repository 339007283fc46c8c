package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/scripts"
)

// Permit is one acquisition of n permits: leased, renewed by the watchdog
// (unless WithLease), and released once. Its methods are safe for
// concurrent use.
//
// A Permit is a hold of count one in the lifecycle every lock handle shares
// (docs/how-it-works.md): its acquire is never abandoned in flight, a grant whose
// lease ran out before its reply came is given back, Release ends it
// locally at once and sends the release whatever ctx says, and a release
// whose reply was lost is sent again before anything else.
type Permit struct {
	s       *Semaphore
	id      string
	channel string // its waiter channel; id shares its bytes (one allocation)
	n       int
	waitMs  string // the attempts' waiter timeout: "0" for TryAcquire (set before them)
	token   uint64 // set once, when granted: it stays the permit's after Release
	hold    *hold.Hold
	h       hold.Hold          // what hold points to: part of the Permit
	target  engine.RenewTarget // its renewal target (one grant per Permit)
}

// newPermit returns the Permit of a request for n permits whose attempts
// pass waitMs; queued is set for Acquire's, which leaves the queue after a
// failure (AfterOps).
func (s *Semaphore) newPermit(n int, waitMs string, queued bool) *Permit {
	p := &Permit{s: s, n: n, waitMs: waitMs}
	p.channel, p.id = s.e.NewOwnerAfter(s.waiterPrefix)
	p.hold = &p.h
	hold.Init(p.hold, hold.Config{
		Engine:    s.e,
		Lease:     s.lease,
		Fixed:     s.fixed,
		Renewer:   s.e.SemRenewer,
		Observed:  s.observed(),
		UndoAfter: queued,
		Calls:     (*permitCalls)(p),
	})
	return p
}

// permitCalls are a Permit's scripts for its Hold (hold.Calls), apart from
// its public methods.
type permitCalls Permit

func (c *permitCalls) RenewTarget(token uint64) any {
	p := (*Permit)(c)
	p.target.Item = scripts.RenewItem{Key: p.s.keys.Holders, Owner: p.id, Token: token, Info: p.s.keys.Info}
	p.target.LeaseMs = p.s.leaseMs
	return &p.target
}

func (c *permitCalls) Acquire(ctx context.Context) (scripts.Acquired, error) {
	p := (*Permit)(c)
	s := p.s
	res, err := scripts.SemAcquire(ctx, s.e.RC, &s.keys, s.capacity, p.n, p.id, s.horizonMs, p.waitMs, s.e.Publish)
	if res.OK {
		res.Count = 1 // one hold, whatever n: a Permit is released once
	}
	return res, err
}

func (c *permitCalls) Release(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error) {
	return (*Permit)(c).release(ctx, a)
}

// ID returns the permit's id, as listed by Holders.
func (p *Permit) ID() string { return p.id }

// Count returns how many permits this Permit holds.
func (p *Permit) Count() int { return p.n }

// Token returns the permit's fencing token: strictly greater than the token
// of every earlier acquisition of the same semaphore.
func (p *Permit) Token() uint64 { return p.token }

// Done returns a channel that is closed when the permits are released or lost.
func (p *Permit) Done() <-chan struct{} { return p.hold.Done() }

// Err returns nil while the permits are held, an error matching
// redisync.ErrLockLost after a loss (lease ran out, permits taken back, or
// the Client closed), and redisync.ErrNotHeld after Release.
func (p *Permit) Err() error { return p.hold.Err() }

// Release gives the permits back and wakes the first waiter.
//
// The Permit ends here at once (renewal stops, Done closes) and the release
// is sent whatever ctx says: ctx bounds only the wait for the reply. When
// ctx is done first Release returns ctx.Err(); the release completes in the
// background and Client.Close waits for it (for at most
// redisync.CloseTimeout: permits it gives up come back with their lease).
// A second Release returns
// redisync.ErrNotHeld and changes nothing. After a loss it removes whatever
// is left and returns an error matching redisync.ErrLockLost. If it returns
// another error, the release stays queued: calling Release again sends it
// again (never releasing twice), and the permits come back within their
// lease anyway, since renewal has stopped. Release panics on a nil ctx.
func (p *Permit) Release(ctx context.Context) error {
	if ctx == nil {
		panic("semaphore: nil Context")
	}
	if p.s.e.IsClosed() && !p.hold.Owes() {
		return redisync.ErrClosed // after Close, only a release still owed goes out
	}
	return p.hold.Unlock(ctx)
}

// attempt is one acquisition round trip, in the shape of engine.Attempt
// (see hold.Attempt for what it guarantees).
func (p *Permit) attempt(ctx context.Context) (bool, time.Duration, error) {
	ok, hint, err := p.hold.Attempt(ctx, nil) // permitCalls.Acquire
	if errors.Is(err, scripts.ErrTooMany) {
		return false, 0, tooMany(p.s.name, p.n, err)
	}
	if ok {
		p.token = p.hold.Token()
	}
	return ok, hint, err
}

// release runs the release script for hold's ReleaseFunc. The permit's id
// is unique to this acquisition, so "released" and "already gone" are all
// there is to tell: a resend after a lost reply that finds it gone is the
// first send's work (hold judges that by the count, 1 before and 0 after).
func (p *Permit) release(ctx context.Context, a scripts.ReleaseArgs) (scripts.Released, error) {
	k := &p.s.keys
	if a.Unrecorded {
		k = k.Unrecorded()
	}
	r, err := scripts.SemRelease(ctx, p.s.e.RC, k, p.id, p.s.e.Publish)
	return scripts.Released{Acted: r == scripts.SemReleased}, err
}

// tooMany is ErrTooMany on one line with the numbers and the name:
// `semaphore "pool": 3 permits requested, capacity is 2: semaphore: more
// permits requested than the capacity`. The script's refusal carries the
// numbers as Redis saw them (the capacity is Redis's, not New's).
func tooMany(name string, n int, err error) error {
	detail := strings.TrimPrefix(err.Error(), scripts.ErrTooMany.Error()+": ")
	if detail == err.Error() || strings.ContainsAny(detail, "\r\n") {
		detail = fmt.Sprintf("%d permits requested", n)
	}
	return fmt.Errorf("semaphore %q: %s: %w", name, detail, ErrTooMany)
}
