package redisync_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// A row of the ctx-bound table: one public method that takes a ctx. prep
// runs while the server answers (taking the holds an Unlock row releases)
// and returns the call; the call waits for stalled (closed once the server
// is stopped) and then makes its call (after) — except a call that begins
// before the stall: a waiter on a busy lock (early), or Do, whose Lock
// comes first and whose function waits for stalled.
type stallRow struct {
	name string
	prep func(t *testing.T, c *redisync.Client, name string) func(ctx context.Context, stalled <-chan struct{}) error
}

// after wraps a call that starts once the server is stopped.
func after(call func(ctx context.Context) error) func(context.Context, <-chan struct{}) error {
	return func(ctx context.Context, stalled <-chan struct{}) error {
		<-stalled
		return call(ctx)
	}
}

// early wraps a call that starts before the stall: a waiter on a lock
// held by others is in its wait loop when the server stops.
func early(call func(ctx context.Context) error) func(context.Context, <-chan struct{}) error {
	return func(ctx context.Context, _ <-chan struct{}) error { return call(ctx) }
}

func bgCtx() context.Context { return context.Background() }

// stallRows lists every public blocking method of every primitive, and Do.
// TestStallTableCoversEveryMethod keeps it complete.
func stallRows() []stallRow {
	type prep = func(t *testing.T, c *redisync.Client, name string) func(context.Context, <-chan struct{}) error
	row := func(name string, p prep) stallRow { return stallRow{name, p} }
	err1 := func(f func(ctx context.Context) error) func(context.Context, <-chan struct{}) error { return after(f) }
	bool1 := func(f func(ctx context.Context) (bool, error)) func(context.Context, <-chan struct{}) error {
		return after(func(ctx context.Context) error { _, err := f(ctx); return err })
	}
	held := func(t *testing.T, l redisync.Locker) redisync.Locker {
		require.NoError(t, l.Lock(bgCtx()))
		return l
	}
	rows := []stallRow{
		row("rlock.Mutex.Lock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(rlock.New(c, n).Lock)
		}),
		row("rlock.Mutex.Lock/busy", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			held(t, rlock.New(c, n))
			return early(rlock.New(c, n).Lock)
		}),
		row("rlock.Mutex.TryLock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(rlock.New(c, n).TryLock)
		}),
		row("rlock.Mutex.Unlock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(held(t, rlock.New(c, n)).Unlock)
		}),
		row("fairlock.Mutex.Lock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(fairlock.New(c, n).Lock)
		}),
		row("fairlock.Mutex.Lock/busy", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			held(t, fairlock.New(c, n))
			return early(fairlock.New(c, n).Lock)
		}),
		row("fairlock.Mutex.Lock/redisson-queue", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(fairlock.New(c, n, fairlock.WithRedissonQueue(2*time.Second)).Lock)
		}),
		row("fairlock.Mutex.Lock/redisson-queue-busy", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			held(t, fairlock.New(c, n, fairlock.WithRedissonQueue(2*time.Second)))
			return early(fairlock.New(c, n, fairlock.WithRedissonQueue(2*time.Second)).Lock)
		}),
		row("fairlock.Mutex.TryLock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(fairlock.New(c, n).TryLock)
		}),
		row("fairlock.Mutex.TryLock/redisson-queue", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(fairlock.New(c, n, fairlock.WithRedissonQueue(2*time.Second)).TryLock)
		}),
		row("fairlock.Mutex.Unlock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(held(t, fairlock.New(c, n)).Unlock)
		}),
		row("fairlock.Mutex.Unlock/redisson-queue", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(held(t, fairlock.New(c, n, fairlock.WithRedissonQueue(2*time.Second))).Unlock)
		}),
		row("fairlock.Mutex.Queue", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error { _, err := fairlock.New(c, n).Queue(ctx); return err })
		}),
		row("rwlock.RWMutex.Lock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(rwlock.New(c, n).Lock)
		}),
		row("rwlock.RWMutex.Lock/writer-preference-busy", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			require.NoError(t, rwlock.New(c, n).RLock(bgCtx()))
			return early(rwlock.New(c, n, rwlock.WithWriterPreference()).Lock)
		}),
		row("rwlock.RWMutex.RLock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(rwlock.New(c, n).RLock)
		}),
		row("rwlock.RWMutex.RLock/busy", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			held(t, rwlock.New(c, n))
			return early(rwlock.New(c, n).RLock)
		}),
		row("rwlock.RWMutex.TryLock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(rwlock.New(c, n).TryLock)
		}),
		row("rwlock.RWMutex.TryRLock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(rwlock.New(c, n).TryRLock)
		}),
		row("rwlock.RWMutex.Unlock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			rw := rwlock.New(c, n)
			require.NoError(t, rw.Lock(bgCtx()))
			return err1(rw.Unlock)
		}),
		row("rwlock.RWMutex.RUnlock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			rw := rwlock.New(c, n)
			require.NoError(t, rw.RLock(bgCtx()))
			return err1(rw.RUnlock)
		}),
		row("semaphore.Semaphore.Acquire", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error { _, err := semaphore.New(c, n, 2).Acquire(ctx, 1); return err })
		}),
		row("semaphore.Semaphore.Acquire/busy", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			s := semaphore.New(c, n, 2)
			_, err := s.Acquire(bgCtx(), 2)
			require.NoError(t, err)
			return early(func(ctx context.Context) error { _, err := s.Acquire(ctx, 1); return err })
		}),
		row("semaphore.Semaphore.TryAcquire", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error { _, _, err := semaphore.New(c, n, 2).TryAcquire(ctx, 1); return err })
		}),
		row("semaphore.Semaphore.SetPermits", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error { return semaphore.New(c, n, 2).SetPermits(ctx, 3) })
		}),
		row("semaphore.Semaphore.Available", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error { _, err := semaphore.New(c, n, 2).Available(ctx); return err })
		}),
		row("semaphore.Semaphore.Capacity", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error { _, err := semaphore.New(c, n, 2).Capacity(ctx); return err })
		}),
		row("semaphore.Semaphore.Waiting", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error { _, err := semaphore.New(c, n, 2).Waiting(ctx); return err })
		}),
		row("semaphore.Permit.Release", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			p, err := semaphore.New(c, n, 2).Acquire(bgCtx(), 1)
			require.NoError(t, err)
			return err1(p.Release)
		}),
		row("semaphore.Locker.Lock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(semaphore.New(c, n, 2).Locker(1).Lock)
		}),
		row("multilock.Mutex.Lock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(multilock.New(rlock.New(c, n+":a"), semaphore.New(c, n+":b", 1).Locker(1)).Lock)
		}),
		row("multilock.Mutex.Lock/one-script", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(multilock.New(rlock.New(c, "{"+n+"}a"), rlock.New(c, "{"+n+"}b")).Lock)
		}),
		row("multilock.Mutex.TryLock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(multilock.New(rlock.New(c, n+":a"), rlock.New(c, n+":b")).TryLock)
		}),
		row("multilock.Mutex.Unlock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(held(t, multilock.New(rlock.New(c, n+":a"), rlock.New(c, n+":b"))).Unlock)
		}),
		row("redlock.Mutex.Lock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(redlock.New([]*redisync.Client{c}, n).Lock)
		}),
		row("redlock.Mutex.TryLock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(redlock.New([]*redisync.Client{c}, n).TryLock)
		}),
		row("redlock.Mutex.Unlock", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(held(t, redlock.New([]*redisync.Client{c}, n)).Unlock)
		}),
		row("latch.Latch.Await", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			l := latch.New(c, n)
			_, err := l.TrySetCount(bgCtx(), 1)
			require.NoError(t, err)
			return err1(l.Await)
		}),
		row("latch.Latch.CountDown", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			l := latch.New(c, n)
			_, err := l.TrySetCount(bgCtx(), 2)
			require.NoError(t, err)
			return err1(l.CountDown)
		}),
		row("latch.Latch.TrySetCount", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(func(ctx context.Context) (bool, error) { return latch.New(c, n).TrySetCount(ctx, 1) })
		}),
		row("latch.Latch.Count", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error { _, err := latch.New(c, n).Count(ctx); return err })
		}),
		row("latch.Latch.Delete", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return bool1(latch.New(c, n).Delete)
		}),
		row("ratelimit.Limiter.Allow", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error {
				_, err := ratelimit.New(c, n, ratelimit.PerSecond(10), 5).Allow(ctx, "k")
				return err
			})
		}),
		row("ratelimit.Limiter.AllowN", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error {
				_, err := ratelimit.New(c, n, ratelimit.PerSecond(10), 5).AllowN(ctx, "k", 2)
				return err
			})
		}),
		row("ratelimit.Limiter.AllowAtMost", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return after(func(ctx context.Context) error {
				_, err := ratelimit.New(c, n, ratelimit.PerSecond(10), 5).AllowAtMost(ctx, "k", 7)
				return err
			})
		}),
		row("ratelimit.Limiter.Reset", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(func(ctx context.Context) error {
				return ratelimit.New(c, n, ratelimit.PerSecond(10), 5).Reset(ctx, "k")
			})
		}),
		row("ratelimit.Limiter.Wait", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return err1(func(ctx context.Context) error {
				return ratelimit.New(c, n, ratelimit.PerSecond(10), 1).Wait(ctx, "k", 1)
			})
		}),
		row("ratelimit.Limiter.Wait/sleeping", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			// Reserved before the stall, for an admission 3 s away;
			// cancelled (not by a deadline, which would have refused the
			// reservation) when ctx ends: its give-back meets the stall.
			l := ratelimit.New(c, n, ratelimit.Every(3*time.Second), 1)
			require.NoError(t, l.Wait(bgCtx(), "k", 1))
			return early(func(ctx context.Context) error {
				cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
				defer context.AfterFunc(ctx, cancel)()
				defer cancel()
				return l.Wait(cctx, "k", 1)
			})
		}),
		row("redisync.Do", func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
			return func(ctx context.Context, stalled <-chan struct{}) error {
				ran := false
				err := redisync.Do(ctx, rlock.New(c, n), func(context.Context) error {
					ran = true
					<-stalled // the release meets the stopped server
					return nil
				})
				if !ran {
					// Lock met the stall: the row would say nothing of the release.
					return errVacuous
				}
				return err
			}
		}),
	}
	// The inspection surface of every lock kind: one round trip each.
	inspectors := map[string]func(c *redisync.Client, n string) inspector{
		"rlock.Mutex":         func(c *redisync.Client, n string) inspector { return rlock.New(c, n) },
		"fairlock.Mutex":      func(c *redisync.Client, n string) inspector { return fairlock.New(c, n) },
		"rwlock.RWMutex":      func(c *redisync.Client, n string) inspector { return rwlock.New(c, n) },
		"semaphore.Semaphore": func(c *redisync.Client, n string) inspector { return semaphore.New(c, n, 2) },
		"redlock.Mutex": func(c *redisync.Client, n string) inspector {
			return redlock.New([]*redisync.Client{c}, n)
		},
		"multilock.Mutex": func(c *redisync.Client, n string) inspector {
			return multilock.New(rlock.New(c, n+":a"), rlock.New(c, n+":b"))
		},
	}
	for kind, mk := range inspectors {
		for _, m := range []string{"IsLocked", "HoldCount", "TTL", "ForceUnlock", "Holders"} {
			rows = append(rows, row(kind+"."+m, func(t *testing.T, c *redisync.Client, n string) func(context.Context, <-chan struct{}) error {
				in := mk(c, n)
				return after(func(ctx context.Context) error {
					out := reflect.ValueOf(in).MethodByName(m).Call([]reflect.Value{reflect.ValueOf(ctx)})
					err, _ := out[len(out)-1].Interface().(error)
					return err
				})
			}))
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return rows
}

var errVacuous = vacuousError{}

type vacuousError struct{}

func (vacuousError) Error() string { return "the call met the stall before the part under test" }

// Issue 22, defects 8 and 9: every public blocking method returns within
// redisync.UndoWait of its ctx's end while the server is stopped (SIGSTOP):
// the rows share one stall of one server, each on its own Client. A
// call's first round trip is the one the stall swallows, except in the
// "/busy" rows, whose waiter has waited 300 ms on a lock held by others
// when the server stops. Before, a fairlock Lock returned 4.7 s
// after a 300 ms deadline (it waited out the settle bound twice: for its
// attempt's reply, then for its leave), and Do ~10 s after (its Unlock had
// a ctx that never ended, bounded only by rueidis's write timeout).
func TestEveryBlockingCallReturnsWithinUndoWaitOfItsDeadlineWhileTheServerStalls(t *testing.T) {
	const (
		deadline = 300 * time.Millisecond
		// margin for a loaded machine (2 shared cores): the bound itself is
		// redisync.UndoWait, the margin what a scheduler may add to it.
		margin = 750 * time.Millisecond
		// giveUp: how long the stall lasts at most; a call still out then
		// has failed by far.
		giveUp = deadline + redisync.UndoWait + 3*time.Second
	)
	srv := redistest.Start(t)
	rows := stallRows()
	calls := make([]func(context.Context, <-chan struct{}) error, len(rows))
	for i, r := range rows {
		c := redisync.New(srv.Client(t))
		t.Cleanup(func() { c.Close() })
		calls[i] = r.prep(t, c, "stall:"+r.name)
	}
	type result struct {
		err  error
		late time.Duration
	}
	results := make([]result, len(rows))
	stalled := make(chan struct{})
	var wg sync.WaitGroup
	returned := make(chan struct{})
	stallAt := time.Now().Add(300 * time.Millisecond) // Do's Lock comes before it
	end := stallAt.Add(deadline)
	for i := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithDeadline(bgCtx(), end)
			defer cancel()
			err := calls[i](ctx, stalled)
			results[i] = result{err, time.Since(end)}
		}()
	}
	go func() { wg.Wait(); close(returned) }()
	time.Sleep(time.Until(stallAt))
	srv.Pause()
	close(stalled)
	select {
	case <-returned:
	case <-time.After(time.Until(end) + giveUp):
	}
	srv.Resume()
	<-returned
	for i, r := range rows {
		res := results[i]
		assert.NotErrorIs(t, res.err, errVacuous, "%s", r.name)
		assert.Less(t, res.late, redisync.UndoWait+margin, "%s returned %v after its deadline (%v)", r.name, res.late, res.err)
		t.Logf("%-48s %6.0f ms after the deadline: %v", r.name, float64(res.late)/float64(time.Millisecond), res.err)
	}
}

// The table names every method that takes a ctx, on every handle type:
// a new blocking method fails this test until it has a row.
func TestStallTableCoversEveryMethod(t *testing.T) {
	have := map[string]bool{}
	for _, r := range stallRows() {
		have[strings.SplitN(r.name, "/", 2)[0]] = true
	}
	types := map[string]any{
		"rlock.Mutex":         (*rlock.Mutex)(nil),
		"fairlock.Mutex":      (*fairlock.Mutex)(nil),
		"rwlock.RWMutex":      (*rwlock.RWMutex)(nil),
		"semaphore.Semaphore": (*semaphore.Semaphore)(nil),
		"semaphore.Permit":    (*semaphore.Permit)(nil),
		"multilock.Mutex":     (*multilock.Mutex)(nil),
		"redlock.Mutex":       (*redlock.Mutex)(nil),
		"latch.Latch":         (*latch.Latch)(nil),
		"ratelimit.Limiter":   (*ratelimit.Limiter)(nil),
	}
	ctxType := reflect.TypeOf((*context.Context)(nil)).Elem()
	for name, v := range types {
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumMethod(); i++ {
			m := typ.Method(i)
			if m.Type.NumIn() > 1 && m.Type.In(1) == ctxType {
				assert.True(t, have[name+"."+m.Name], "no ctx-bound row for %s.%s", name, m.Name)
			}
		}
	}
	for _, f := range []string{"redisync.Do", "semaphore.Locker.Lock"} {
		assert.True(t, have[f], "no ctx-bound row for %s", f)
	}
}

// Issue 22, defect 9: Close is bounded by CloseTimeout even when an
// Unlock's release is still waiting for a stopped server and the Unlock's
// ctx could end but has not. Close gives that release up: the Unlock
// returns, the key stays in Redis to expire with its lease, and nothing of
// the Client is left running. Before, Close waited ~12 s (rueidis's write
// timeout, the only bound of the release while its ctx lived).
func TestCloseGivesUpAReleaseItCannotFinish(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.OneConnClient(t) // see there
	c := redisync.New(rc)
	const name = "stall:close"
	m := rlock.New(c, name)
	require.NoError(t, m.Lock(bgCtx()))
	srv.Pause()
	defer srv.Resume()
	ctx, cancel := context.WithTimeout(bgCtx(), time.Minute)
	defer cancel()
	unlocked := make(chan error, 1)
	go func() { unlocked <- m.Unlock(ctx) }()
	// The release is on its way: its send waits for the stopped server (an
	// Unlock that starts after Close would be no task of Close's to give up).
	require.Eventually(t, func() bool {
		buf := make([]byte, 1<<20)
		return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "internal/hold.(*Hold).send")
	}, 10*time.Second, 10*time.Millisecond, "the Unlock's release never went out")
	start := time.Now()
	c.Close()
	took := time.Since(start)
	assert.Less(t, took, redisync.CloseTimeout+time.Second, "Close outlived its bound")
	select {
	case err := <-unlocked:
		assert.ErrorIs(t, err, redisync.ErrClosed, "the release was given up by Close, not done")
		assert.NotErrorIs(t, err, context.Canceled, "the caller's ctx was never cancelled")
		assert.Contains(t, err.Error(), name, "the error names the lock")
	case <-time.After(time.Second):
		t.Fatal("Unlock still waits after Close returned")
	}
	assert.Empty(t, ourGoroutines(), "goroutines of the Client left after Close")
	srv.Resume()
	pttl, err := rc.Do(bgCtx(), rc.B().Pttl().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	// The release was on the wire when Close gave it up: the resumed server
	// runs it (-2) or, had it not left the client, the hold expires with its
	// lease; never a key left without expiry.
	assert.True(t, pttl > 0 || pttl == -2, "the given-up release left the hold with PTTL %d", pttl)
}

// Every row of the ctx-bound table returns against a stopped server,
// leaving its undo or release to a Client task; then Close, the server
// still stopped. Close keeps its bound and no goroutine of the Client is
// left when it returns: a task it gave up that takes a handle's op lock
// afterwards (a fairlock or semaphore leave after AfterOps, an rlock
// compensate) finds its contexts given up too, and the hub's shutdown runs
// inside the bound. Before, Close took 3 s (1 s of it in Hub.Close before
// the bounded wait) and six tasks stayed in rueidis until 4.8 s after Close
// began, each on a fresh CompensateTimeout.
func TestCloseLeavesNoGoroutineAfterGivingUpManyTasks(t *testing.T) {
	srv := redistest.Start(t)
	c := redisync.New(srv.Client(t))
	rows := stallRows()
	calls := make([]func(context.Context, <-chan struct{}) error, len(rows))
	for i, r := range rows {
		calls[i] = r.prep(t, c, "giveup:"+r.name)
	}
	stalled := make(chan struct{})
	var wg sync.WaitGroup
	stallAt := time.Now().Add(300 * time.Millisecond)
	end := stallAt.Add(300 * time.Millisecond)
	for i := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithDeadline(bgCtx(), end)
			defer cancel()
			_ = calls[i](ctx, stalled)
		}()
	}
	time.Sleep(time.Until(stallAt))
	srv.Pause()
	defer srv.Resume()
	close(stalled)
	wg.Wait()
	start := time.Now()
	c.Close()
	took := time.Since(start)
	left := ourGoroutines()
	assert.Less(t, took, redisync.CloseTimeout+500*time.Millisecond, "Close outlived its bound")
	if !assert.Empty(t, left, "goroutines of the Client left right after Close (%d)", len(left)) {
		t.Logf("first one left:\n%s", left[0])
	}
}

// Do(context.Background()) whose fn returns as the server stops: its
// release cannot finish, and Close (from another goroutine, a shutdown)
// gives it up. Do returns then, with an error matching ErrClosed — not
// context.Canceled, which would say the caller's ctx ended. Before, Do
// returned a bare "context canceled".
func TestDoWithBackgroundCtxReturnsErrClosedWhenCloseGivesUpItsRelease(t *testing.T) {
	srv := redistest.Start(t)
	c := redisync.New(srv.Client(t))
	stalled := make(chan struct{})
	got := make(chan error, 1)
	go func() {
		got <- redisync.Do(context.Background(), rlock.New(c, "stall:do:bg"), func(context.Context) error {
			srv.Pause()
			close(stalled)
			return nil
		})
	}()
	<-stalled
	defer srv.Resume()
	time.Sleep(200 * time.Millisecond) // the release is on its way
	start := time.Now()
	c.Close()
	select {
	case err := <-got:
		assert.ErrorIs(t, err, redisync.ErrClosed)
		assert.NotErrorIs(t, err, context.Canceled, "nobody cancelled the caller's ctx")
	case <-time.After(redisync.CloseTimeout + time.Second):
		t.Errorf("Do(context.Background()) still blocked %v after Close began", time.Since(start))
		srv.Resume()
		<-got
	}
	assert.Empty(t, ourGoroutines(), "goroutines of the Client left after Close")
}

// ourGoroutines returns the stacks of goroutines (but this one) running
// code of this module outside test files and the test server's process
// watch, as they are once the ones about to exit have: it looks again
// for up to exitSettle while any are left. A goroutine whose work is done
// (a task that counted itself out, a given-up context's AfterFunc that
// has only an ended context left to cancel) may not have run to its end
// yet on a loaded machine; one still waiting for Redis stays for seconds.
func ourGoroutines() []string {
	deadline := time.Now().Add(exitSettle)
	for {
		left := goroutinesNow()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exitSettle is how long ourGoroutines gives goroutines whose work is done
// to exit.
const exitSettle = 200 * time.Millisecond

func goroutinesNow() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // this goroutine
		}
		for _, line := range strings.Split(g, "\n") {
			if (strings.HasPrefix(line, "github.com/redisync/redisync/") || strings.HasPrefix(line, "github.com/redisync/redisync.")) &&
				!strings.HasPrefix(line, "github.com/redisync/redisync_test.") &&
				!strings.HasPrefix(line, "github.com/redisync/redisync/internal/redistest.") {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// The package doc states UndoWait's and CloseTimeout's values; they must be
// the constants'.
func TestDocStatesTheCtxBounds(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " ")
	assert.Contains(t, text, fmt.Sprintf("UndoWait (%d ms)", redisync.UndoWait.Milliseconds()))
	assert.Contains(t, text, fmt.Sprintf("CloseTimeout (%g s)", redisync.CloseTimeout.Seconds()))
}
