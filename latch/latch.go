package latch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/internal/scripts"
)

// MaxCount is the largest count TrySetCount accepts: 2^53 - 1, the largest
// integer the scripts' Lua numbers hold exactly.
const MaxCount = 1<<53 - 1

// ErrInvalidCount is returned, before any I/O, by TrySetCount for a count
// below 1 or above MaxCount.
var ErrInvalidCount = errors.New("latch: count out of range")

// Latch is a handle on one countdown latch. It is a cheap value without
// state of its own: every method asks Redis, and handles on one name (in
// any process, Go or Java) are interchangeable. Safe for concurrent use.
type Latch struct {
	e       *engine.Engine
	name    string
	nameErr error
	keys    scripts.LatchKeys
	poll    time.Duration
}

// New returns a handle on the latch name. It does no I/O. It panics on a
// nil client or an invalid option; a name that cannot be used (empty,
// longer than lockopt's MaxNameLength, starting with "redisync_", or on a
// Redis Cluster one whose Redisson channel is in another slot: a name with
// a '}', hash tags included) makes every method return redisync.ErrInvalidName.
func New(c *redisync.Client, name string, opts ...Option) *Latch {
	e := engine.FromClient(c)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	o.validate()
	channel, ok := keys.LatchChannel(name)
	nameErr := lockopt.CheckName("latch", e, name)
	if nameErr == nil && !ok && e.Cluster {
		nameErr = fmt.Errorf("latch: name %q contains '}', so Redisson's latch channel %q is in another Cluster slot: %w",
			name, channel, errs.ErrInvalidName)
	}
	poll := o.poll
	if poll == 0 {
		poll = e.Config.MaxPoll
	}
	return &Latch{e: e, name: name, nameErr: nameErr, poll: max(poll, time.Millisecond),
		keys: scripts.LatchKeys{Latch: name, Channel: channel}}
}

// Name returns the latch's name (its key in Redis).
func (l *Latch) Name() string { return l.name }

// TrySetCount creates the latch with count n, and reports whether it did:
// false, changing nothing, when a latch of that name exists (Redisson's
// trySetCount; a latch exists until its count reaches zero or it is
// deleted). n must be in 1..MaxCount (ErrInvalidCount, before any I/O).
// Anything else under the name is a *redisync.WrongKindError, left as it is.
// With redisync.WithWaitReplicas, a write the replicas did not acknowledge
// returns an error matching redisync.ErrNotReplicated together with what it
// did on the master: (true, err) when it created the latch there.
func (l *Latch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, err
	}
	if n < 1 || n > MaxCount {
		return false, fmt.Errorf("latch %q: count %d is not in 1..%d: %w", l.name, n, int64(MaxCount), ErrInvalidCount)
	}
	ok, err := scripts.LatchTrySetCount(ctx, l.e.RC, &l.keys, n, l.e.Publish)
	return ok, l.wrap(ctx, "setting the count", err)
}

// CountDown decrements the count. The one that brings it to zero deletes
// the latch and publishes the zero-count message, which releases every
// waiter in every process. A CountDown of an open latch (count zero, no
// key) does nothing, as in Redisson.
func (l *Latch) CountDown(ctx context.Context) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	_, err := scripts.LatchCountDown(ctx, l.e.RC, &l.keys, l.e.Publish)
	return l.wrap(ctx, "counting down", err)
}

// Count returns the current count: 0 when the latch is open (no key).
func (l *Latch) Count(ctx context.Context) (int64, error) {
	if err := l.check(ctx); err != nil {
		return 0, err
	}
	n, err := scripts.LatchCount(ctx, l.e.RC, &l.keys)
	return n, l.wrap(ctx, "reading the count", err)
}

// Delete deletes the latch whatever its count, which opens it: every
// waiter returns. It reports whether there was a latch.
func (l *Latch) Delete(ctx context.Context) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, err
	}
	ok, err := scripts.LatchDelete(ctx, l.e.RC, &l.keys, l.e.Publish)
	return ok, l.wrap(ctx, "deleting", err)
}

// Await blocks until the latch is open — its count is zero or its key is
// gone, however that happened — or ctx ends (ctx.Err(), unwrapped). A
// latch that was never set is open. Await writes nothing to Redis; it
// listens on the latch's channel through the Client's shared subscription
// and checks the count after every message and at least every poll
// interval (WithPoll), so a lost message or a dropped subscription costs at
// most one interval. A transient transport error is retried within ctx.
func (l *Latch) Await(ctx context.Context) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	_, _, err := l.e.Wait(ctx, engine.Wait{Channel: l.keys.Channel, All: true, Poll: l.poll}, l.open)
	return l.failed(ctx, err)
}

// open is Await's attempt: it succeeds when the latch's count is zero.
func (l *Latch) open(ctx context.Context) (bool, time.Duration, error) {
	n, err := scripts.LatchCount(ctx, l.e.RC, &l.keys)
	return err == nil && n <= 0, 0, err
}

// failed is what Await returns for the error the wait ended with.
func (l *Latch) failed(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if l.e.IsClosed() {
		return errs.ErrClosed
	}
	return l.wrap(ctx, "waiting", err)
}

// check is the guard at the top of every method.
func (l *Latch) check(ctx context.Context) error {
	return lockopt.Check("latch", l.e, l.nameErr, ctx)
}

// wrap names the latch and the operation in a Redis or transport error (a
// WrongKindError included); ctx's own end is returned unwrapped.
func (l *Latch) wrap(ctx context.Context, doing string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return cerr
	}
	return engine.WrapIO("latch: "+doing, l.name, err)
}
