package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// locker is what every contender offers: acquire (blocking) and release.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// contender is one library (with its settings) on one server.
type contender struct {
	Name     string `json:"name"`
	Settings string `json:"settings"`
	// open connects to addr and returns a factory of lockers (one per
	// goroutine: a locker value is one owner) and a cleanup.
	open func(addr string) (func(name string) locker, func(), error)
}

func redisyncContender(name, settings string, mk func(c *redisync.Client, key string) locker) contender {
	return contender{Name: name, Settings: settings, open: func(addr string) (func(string) locker, func(), error) {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			return nil, nil, err
		}
		c := redisync.New(rc)
		return func(key string) locker { return mk(c, key) }, func() { c.Close(); rc.Close() }, nil
	}}
}

type permitLocker struct {
	s *semaphore.Semaphore
	p *semaphore.Permit
}

func (l *permitLocker) Lock(ctx context.Context) (err error) {
	l.p, err = l.s.Acquire(ctx, 1)
	return err
}
func (l *permitLocker) Unlock(ctx context.Context) error { return l.p.Release(ctx) }

type redsyncLocker struct{ m *redsync.Mutex }

func (l redsyncLocker) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }
func (l redsyncLocker) Unlock(ctx context.Context) error {
	_, err := l.m.UnlockContext(ctx)
	return err
}

type bsmLocker struct {
	c    *redislock.Client
	key  string
	opts *redislock.Options
	held *redislock.Lock
}

func (l *bsmLocker) Lock(ctx context.Context) (err error) {
	l.held, err = l.c.Obtain(ctx, l.key, 30*time.Second, l.opts)
	return err
}
func (l *bsmLocker) Unlock(ctx context.Context) error { return l.held.Release(ctx) }

type rueidisLocker struct {
	l      rueidislock.Locker
	key    string
	cancel context.CancelFunc
}

func (l *rueidisLocker) Lock(ctx context.Context) error {
	_, cancel, err := l.l.WithContext(ctx, l.key)
	l.cancel = cancel
	return err
}
func (l *rueidisLocker) Unlock(context.Context) error { l.cancel(); return nil }

// redsyncOptions are redsync's defaults (8 s expiry, 50–250 ms random retry
// delay) with tries raised so that Lock waits as long as ctx allows, as
// the other contenders' Lock does.
var redsyncOptions = []redsync.Option{redsync.WithTries(1 << 30)}

func contenders() []contender {
	return []contender{
		redisyncContender("redisync rlock", "watchdog 30 s, pub/sub wake-ups, max poll 1 s", func(c *redisync.Client, k string) locker {
			return rlock.New(c, k)
		}),
		redisyncContender("redisync fairlock", "FIFO queue, waiter timeout 5 s", func(c *redisync.Client, k string) locker {
			return fairlock.New(c, k)
		}),
		redisyncContender("redisync rwlock (write)", "write side", func(c *redisync.Client, k string) locker {
			return rwlock.New(c, k).WriteLocker()
		}),
		redisyncContender("redisync semaphore(1)", "capacity 1, one permit", func(c *redisync.Client, k string) locker {
			return &permitLocker{s: semaphore.New(c, k, 1)}
		}),
		{Name: "redsync v4", Settings: "go-redis v9 pool of 256; expiry 8 s; retry 50–250 ms (defaults), unlimited tries", open: func(addr string) (func(string) locker, func(), error) {
			cl := goredislib.NewClient(&goredislib.Options{Addr: addr, PoolSize: 256})
			rs := redsync.New(goredis.NewPool(cl))
			return func(k string) locker { return redsyncLocker{rs.NewMutex(k, redsyncOptions...)} }, func() { cl.Close() }, nil
		}},
		{Name: "bsm/redislock", Settings: "go-redis v9 pool of 256; TTL 30 s; exponential backoff 1–32 ms", open: func(addr string) (func(string) locker, func(), error) {
			cl := goredislib.NewClient(&goredislib.Options{Addr: addr, PoolSize: 256})
			c := redislock.New(cl)
			opts := &redislock.Options{RetryStrategy: redislock.ExponentialBackoff(time.Millisecond, 32*time.Millisecond)}
			return func(k string) locker { return &bsmLocker{c: c, key: k, opts: opts} }, func() { cl.Close() }, nil
		}},
		rueidisContender(1),
		rueidisContender(2),
	}
}

// rueidisContender is rueidislock with client-side-caching wake-ups and
// NOLOOP (the README's recommended settings; the server is 7.0.15).
func rueidisContender(majority int32) contender {
	name := fmt.Sprintf("rueidislock (KeyMajority %d)", majority)
	settings := "validity 5 s, NoLoopTracking, client-side-caching wake-ups"
	if majority == 2 {
		settings += " (default majority: 3 keys)"
	}
	return contender{Name: name, Settings: settings, open: func(addr string) (func(string) locker, func(), error) {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
			KeyMajority:    majority,
			NoLoopTracking: true,
		})
		if err != nil {
			return nil, nil, err
		}
		return func(k string) locker { return &rueidisLocker{l: l, key: k} }, l.Close, nil
	}}
}
