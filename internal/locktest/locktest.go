// Package locktest is the test kit shared by the lock packages' tests: a
// real redis-server per test with a redisync Client on it, raw Redis access
// for assertions, a pub/sub recorder, and deadline polls.
package locktest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// Main is a package's TestMain: it runs the tests and fails the run if
// goroutines leaked. (Examples start their own server with redisynctest.)
func Main(m *testing.M) { goleak.VerifyTestMain(m) }

// Env is one test's server, rueidis client and redisync Client.
type Env struct {
	Srv *redistest.Server
	RC  rueidis.Client
	C   *redisync.Client
}

// Setup starts a server and a Client on it, both stopped at cleanup.
func Setup(t *testing.T, opts ...redisync.Option) *Env {
	t.Helper()
	srv := redistest.Start(t)
	rc := srv.Client(t)
	c := redisync.New(rc, opts...)
	t.Cleanup(func() { c.Close() })
	return &Env{Srv: srv, RC: rc, C: c}
}

// Client returns one more redisync Client on the same server (another
// "process"), closed at cleanup.
func (e *Env) Client(t *testing.T, opts ...redisync.Option) *redisync.Client {
	rc := e.Srv.Client(t)
	c := redisync.New(rc, opts...)
	t.Cleanup(func() { c.Close() })
	return c
}

// Do runs a raw command and fails the test if it cannot be sent.
func (e *Env) Do(t *testing.T, args ...string) rueidis.RedisResult {
	t.Helper()
	return redistest.Do(t, e.RC, args...)
}

// Int runs a raw command with an integer reply.
func (e *Env) Int(t *testing.T, args ...string) int64 {
	t.Helper()
	n, err := e.Do(t, args...).AsInt64()
	require.NoError(t, err, "%v", args)
	return n
}

// Exists reports whether key exists.
func (e *Env) Exists(t *testing.T, key string) bool { return e.Int(t, "EXISTS", key) == 1 }

// PTTL returns key's PTTL (-2: no key, -1: no expiry).
func (e *Env) PTTL(t *testing.T, key string) int64 { return e.Int(t, "PTTL", key) }

// DBSize returns the number of keys, not counting last-token keys (see
// Keys).
func (e *Env) DBSize(t *testing.T) int64 { return int64(len(e.Keys(t))) }

// Keys lists every key but the last-token keys ("redisync_lock_token:..."),
// which every release that deletes a lock leaves for 10 s by design (the
// last fencing token, lib.lua keep_token): a test of what a release leaves
// behind asks about them by name. Describe lists every key.
func (e *Env) Keys(t *testing.T) []string {
	ks, err := e.Do(t, "KEYS", "*").AsStrSlice()
	require.NoError(t, err)
	out := ks[:0]
	for _, k := range ks {
		if !strings.HasPrefix(k, keys.LockTokenPrefix+":") {
			out = append(out, k)
		}
	}
	return out
}

// Subscribe records every message published on channel (or, when pattern,
// on every matching channel, as "channel|message") until the test ends.
func (e *Env) Subscribe(t *testing.T, channel string, pattern bool) <-chan string {
	t.Helper()
	rc := e.Srv.Client(t)
	msgs := make(chan string, 1024)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	cmd := rc.B().Subscribe().Channel(channel).Build()
	if pattern {
		cmd = rc.B().Psubscribe().Pattern(channel).Build()
	}
	go func() {
		defer close(done)
		once := false
		hctx := rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) {
			if !once {
				once = true
				close(ready)
			}
		})
		_ = rc.Receive(hctx, cmd, func(m rueidis.PubSubMessage) {
			if pattern {
				msgs <- m.Channel + "|" + m.Message
				return
			}
			msgs <- m.Message
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not confirmed")
	}
	return msgs
}

// WaitSubscribed waits until some connection is subscribed to channel.
func (e *Env) WaitSubscribed(t *testing.T, channel string) {
	t.Helper()
	Eventually(t, 5*time.Second, func() bool {
		vals, err := e.Do(t, "PUBSUB", "NUMSUB", channel).ToArray()
		if err != nil || len(vals) != 2 {
			return false
		}
		n, _ := vals[1].AsInt64()
		return n > 0
	}, "waiter subscribed to "+channel)
}

// WaitEmpty waits until the database holds no key but last-token keys (see
// Keys).
func (e *Env) WaitEmpty(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for e.DBSize(t) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not within 3s: database empty; left: %s", e.Describe(t))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Describe lists every key with its type, remaining TTL and contents, for
// failure messages.
func (e *Env) Describe(t *testing.T) string {
	t.Helper()
	keys, err := e.Do(t, "KEYS", "*").AsStrSlice()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, k := range keys {
		typ, _ := e.Do(t, "TYPE", k).ToString()
		pttl, _ := e.Do(t, "PTTL", k).AsInt64()
		var val any
		switch typ {
		case "hash":
			val, _ = e.Do(t, "HGETALL", k).AsStrMap()
		case "zset":
			val, _ = e.Do(t, "ZRANGE", k, "0", "-1", "WITHSCORES").ToAny()
		case "string":
			val, _ = e.Do(t, "GET", k).ToString()
		}
		fmt.Fprintf(&b, "\n  %s %s pttl=%dms %v", k, typ, pttl, val)
	}
	return b.String()
}

// Engine returns a Client's engine.
func Engine(c *redisync.Client) *engine.Engine { return engine.FromClient(c) }

// Eventually polls cond every 5 ms until it holds or the deadline passes.
func Eventually(t *testing.T, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Bg is context.Background.
func Bg() context.Context { return context.Background() }

// Acquirer is one attempt of a cancellation storm: it acquires under ctx and
// returns how to release what it got (nil with an error).
type Acquirer func(ctx context.Context) (release func() error, err error)

// CancelStorm runs goroutines × each acquisitions, each under a random
// deadline of up to 3 ms and, one in four, cancelled at a random moment
// before that. newWorker builds one goroutine's acquirer (its own handle)
// from its random source. Granted acquisitions are released at once. Any
// error other than the context's own (compared with ==, as Lock returns
// ctx.Err() unwrapped) fails the test. It returns how many acquisitions
// were granted and how many were cancelled.
func CancelStorm(t *testing.T, goroutines, each int, newWorker func(r *rand.Rand) Acquirer) (granted, cancelled int64) {
	t.Helper()
	var g, c atomic.Int64
	var wg sync.WaitGroup
	for i := range goroutines {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		acquire := newWorker(r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(3000))*time.Microsecond)
				stop := func() bool { return false }
				if r.IntN(4) == 0 {
					stop = time.AfterFunc(time.Duration(r.IntN(2000))*time.Microsecond, cancel).Stop
				}
				release, err := acquire(ctx)
				stop()
				cancel()
				switch {
				case err == nil:
					g.Add(1)
					if err := release(); err != nil {
						t.Error(err)
					}
				case err == context.Canceled || err == context.DeadlineExceeded:
					c.Add(1)
				default:
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("granted %d, cancelled %d", g.Load(), c.Load())
	return g.Load(), c.Load()
}

// Locker is a handle's Lock and Unlock.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// ShareReentrantHandle has goroutines loop Lock then Unlock on one
// reentrant handle for d, so that one's last Unlock keeps meeting
// another's grant. Every Unlock after a nil Lock must return nil; the
// caller then checks that the lock is free.
func ShareReentrantHandle(t *testing.T, l Locker, goroutines int, d time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	var failed, cycles atomic.Int64
	deadline := time.Now().Add(d)
	for range goroutines {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := l.Lock(Bg()); err != nil {
					t.Error("lock:", err)
					return
				}
				if err := l.Unlock(Bg()); err != nil && failed.Add(1) <= 3 {
					t.Error("unlock after a nil Lock:", err)
				}
				cycles.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Errorf("%d of %d Unlocks after a nil Lock failed", failed.Load(), cycles.Load())
	}
}

// AwaitRecord waits until the holder record of owner field on name is in
// rc's holder-info hash: holds record who holds them with their first
// renewal (or, for a fixed lease, the watchdog's timer), a third of the
// lease after the grant — not at the acquire. within bounds the wait.
func AwaitRecord(t *testing.T, rc rueidis.Client, name, field string, within time.Duration) {
	t.Helper()
	info, _ := keys.Derived(keys.HolderInfoPrefix, name)
	Eventually(t, within, func() bool {
		n, err := rc.Do(context.Background(), rc.B().Hexists().Key(info).Field(field).Build()).AsInt64()
		return err == nil && n == 1
	}, "no holder record for "+field+" on "+name)
}

// AwaitAnyRecord is AwaitRecord for whatever field: some hold of name has
// its record.
func AwaitAnyRecord(t *testing.T, rc rueidis.Client, name string, within time.Duration) {
	t.Helper()
	info, _ := keys.Derived(keys.HolderInfoPrefix, name)
	Eventually(t, within, func() bool {
		n, err := rc.Do(context.Background(), rc.B().Exists().Key(info).Build()).AsInt64()
		return err == nil && n == 1
	}, "no holder record on "+name)
}
