package redisync

import (
	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/engine"
)

// Client is the shared engine for one Redis deployment: the client id, the
// wake-up hub (one subscription per channel, shared by local waiters) and
// the watchdog (one renewal engine for every hold). Create one per
// deployment and share it; locks are cheap values built on it.
type Client struct {
	e *engine.Engine
}

func init() {
	engine.Register(func(v any) *engine.Engine {
		c, _ := v.(*Client)
		if c == nil {
			return nil
		}
		return c.e
	})
}

// New returns a Client over rc. It does no I/O and starts one goroutine (the
// watchdog). The caller keeps owning rc: Close does not close it, and rc
// must stay open until Close returns. The contexts redisync passes to rc's
// Do and DoMulti are valid for that call: a wrapper or hook of rc that keeps
// one after the call returns (rueidis and rueidishook do not) may see it
// serve a later call, since redisync reuses them.
//
// New panics if rc is nil or an option is out of range.
func New(rc rueidis.Client, opts ...Option) *Client {
	if rc == nil {
		panic("redisync: New with a nil rueidis.Client")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	o.validate()
	c := &Client{e: engine.New(rc, engine.Config{
		WatchdogTimeout: o.watchdogTimeout,
		MaxPoll:         o.maxPoll,
		Logger:          o.logger,
		Observer:        o.observer,
		WaitReplicas:    o.replication.replicas,
		WaitTimeout:     o.replication.timeout,
		HolderInfo:      o.holder.encoded(),
	})}
	if o.eviction != EvictionOff {
		c.e.Preflight = newEvictionChecker(o.eviction, c.e, rc).preflight
	}
	return c
}

// ID returns the client's id (a random UUID), the prefix of every owner id it
// draws.
func (c *Client) ID() string { return c.e.ID }

// Close stops renewals and subscriptions and waits for every goroutine the
// Client started, including its tasks: releases whose callers stopped
// waiting (an Unlock whose ctx ended first, or is still waiting) and the
// undos of cancelled calls, and the round trips of calls whose ctx cannot
// end (a Lock or Unlock with context.Background()). It waits for those tasks
// for at most CloseTimeout: the ones still waiting for Redis then (a stalled
// or unreachable server) are given up and return at once — a call still
// waiting for one returns an error matching ErrClosed that names its lock; a
// release given up this way leaves its hold in Redis to expire with its
// lease, and an undo given up leaves a grant to expire with its lease or a
// queued request to lapse after its waiter timeout. Nothing else is left:
// Close returns after every goroutine of the Client has exited — save a task
// caught inside rueidis opening a new connection to a server that does not
// answer, which rueidis's dial timeout ends. Holds still renewed are
// reported lost (Done closes, Err matches ErrLockLost and ErrClosed) and
// expire in Redis within their lease; waiters in Lock return ErrClosed.
// Close does not release locks: Unlock first. An Unlock after Close still
// removes what is left of a hold Close reported lost, as after any loss (its
// release is bounded as always, and its error matches ErrLockLost and
// ErrClosed); a call that would take or read anything after Close returns
// ErrClosed. It is idempotent and always returns nil.
func (c *Client) Close() error {
	c.e.Close()
	return nil
}
