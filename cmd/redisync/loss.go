package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
)

// lossWatch is the Client's Observer: it keeps the last renewal failure and
// the loss's cause, so a lost lock can be explained.
type lossWatch struct {
	mu         sync.Mutex
	renewErr   error
	renewErrAt time.Time
	lostErr    error
}

func (l *lossWatch) Observe(ev redisync.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev.Kind {
	case redisync.EventRenewFailed:
		l.renewErr, l.renewErrAt = ev.Err, time.Now()
	case redisync.EventRenewed:
		l.renewErr = nil
	case redisync.EventLost:
		l.lostErr = ev.Err
	}
}

// lossInspectTimeout bounds reason's question to Redis. The command has
// had its SIGTERM already; the answer only explains the loss.
const lossInspectTimeout = time.Second

// reason says why the hold on name ended: renewals that could not reach
// Redis, or what is in Redis now (nothing: deleted, expired or the data lost
// in a restart; or another holder).
func (l *lossWatch) reason(rc rueidis.Client, name string) string {
	l.mu.Lock()
	renewErr, at, lostErr := l.renewErr, l.renewErrAt, l.lostErr
	l.mu.Unlock()
	if renewErr != nil { // Redis did not answer the renewals: no use asking it
		return fmt.Sprintf("renewal could not reach Redis before the lease ran out (last failure %s ago: %v)", time.Since(at).Round(time.Millisecond), renewErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lossInspectTimeout)
	defer cancel()
	r, err := inspect(ctx, rc, name)
	switch {
	case err != nil:
		return fmt.Sprintf("Redis cannot be reached (%v)", err)
	case !r.Locked:
		return "its key is gone from Redis: force-unlocked (redisync unlock --force), deleted, expired, or lost in a restart or failover"
	case lostErr != nil && !errors.Is(lostErr, redisync.ErrLockLost):
		return fmt.Sprintf("%v; it is now %s", lostErr, holders(r))
	}
	return "its hold is no longer in Redis (force-unlocked, deleted or expired); now " + holders(r)
}

// errorsIsLost reports a release that found the hold already lost.
func errorsIsLost(err error) bool { return errors.Is(err, redisync.ErrLockLost) }
