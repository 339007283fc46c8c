package latch

import (
	"context"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redisync/redisync"
)

// The model drives random sequences of TrySetCount, CountDown, Count,
// Delete, Await (started in the background, on one of two Clients) and
// cancellations against a real server, and checks after every step:
//
//   - the key is exactly Redisson's layout for the model's count: no key
//     at 0, else a decimal string without expiry, and nothing else in the
//     database;
//   - every method's answer is the model's (TrySetCount only on no latch,
//     CountDown never below 0, Delete reports a latch);
//   - safety: a waiter returned nil only if the count was 0 at some moment
//     since it started;
//   - liveness: when the count is 0, every waiter returns within
//     modelWake — with a 30 s poll, only the message explains that;
//   - a cancelled waiter returns context.Canceled within modelWake.
//
// Teeth: the mutant latch_wake_one makes it fail (two waiters on one
// Client at a count-down to zero: the second sleeps out the poll).

const modelWake = 5 * time.Second

type modelWaiter struct {
	cancel   context.CancelFunc
	done     chan error
	sawZero  bool // the count was 0 at some moment since it started
	returned bool
	err      error
}

func TestModelLatchAgainstRedis(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	clients := []*redisync.Client{e.C, e.Client(t, redisync.WithMaxPoll(30*time.Second))}
	const name = "model:latch"
	rapid.Check(t, func(rt *rapid.T) {
		e.Do(t, "FLUSHALL")
		var count int64
		var waiters []*modelWaiter
		handle := func() *Latch {
			return New(clients[rapid.IntRange(0, 1).Draw(rt, "client")], name)
		}
		defer func() { // every waiter ends with the run
			for _, w := range waiters {
				w.cancel()
				if !w.returned {
					<-w.done
				}
			}
		}()
		zero := func() {
			for _, w := range waiters {
				w.sawZero = true
			}
		}
		// poll collects the waiters that returned, checking safety.
		poll := func() {
			for _, w := range waiters {
				if w.returned {
					continue
				}
				select {
				case w.err = <-w.done:
					w.returned = true
					if w.err == nil && !w.sawZero {
						rt.Fatalf("a waiter returned while the count was never 0 since it started")
					}
				default:
				}
			}
		}
		check := func() {
			poll()
			if count == 0 {
				for _, w := range waiters {
					if w.returned {
						continue
					}
					select {
					case w.err = <-w.done:
						w.returned = true
					case <-time.After(modelWake):
						rt.Fatalf("the count is 0, a waiter did not return within %v (poll 30 s)", modelWake)
					}
				}
			}
			keys := e.Keys(t)
			if count == 0 {
				if len(keys) != 0 {
					rt.Fatalf("count 0, keys left: %v", keys)
				}
			} else {
				v, err := e.Do(t, "GET", name).ToString()
				if len(keys) != 1 || err != nil || v != strconv.FormatInt(count, 10) || e.PTTL(t, name) != -1 {
					rt.Fatalf("count %d: keys %v, value %q (%v), pttl %d", count, keys, v, err, e.PTTL(t, name))
				}
			}
			live := waiters[:0]
			for _, w := range waiters {
				if !w.returned {
					live = append(live, w)
				} else if w.err != nil && w.err != context.Canceled {
					rt.Fatalf("a waiter failed: %v", w.err)
				}
			}
			waiters = live
		}
		rt.Repeat(map[string]func(*rapid.T){
			"TrySetCount": func(rt *rapid.T) {
				n := rapid.Int64Range(1, 3).Draw(rt, "n")
				ok, err := handle().TrySetCount(bg(), n)
				if err != nil || ok != (count == 0) {
					rt.Fatalf("TrySetCount(%d) at count %d = %v, %v", n, count, ok, err)
				}
				if ok {
					count = n
				}
				check()
			},
			"CountDown": func(rt *rapid.T) {
				if err := handle().CountDown(bg()); err != nil {
					rt.Fatal(err)
				}
				if count > 0 {
					count--
				}
				if count == 0 {
					zero()
				}
				check()
			},
			"Count": func(rt *rapid.T) {
				n, err := handle().Count(bg())
				if err != nil || n != count {
					rt.Fatalf("Count = %d, %v; model %d", n, err, count)
				}
				check()
			},
			"Delete": func(rt *rapid.T) {
				ok, err := handle().Delete(bg())
				if err != nil || ok != (count > 0) {
					rt.Fatalf("Delete at count %d = %v, %v", count, ok, err)
				}
				count = 0
				zero()
				check()
			},
			"Await": func(rt *rapid.T) {
				ctx, cancel := context.WithCancel(bg())
				w := &modelWaiter{cancel: cancel, done: make(chan error, 1), sawZero: count == 0}
				l := handle()
				go func() { w.done <- l.Await(ctx) }()
				waiters = append(waiters, w)
				check()
			},
			"Cancel": func(rt *rapid.T) {
				poll()
				var live []*modelWaiter
				for _, w := range waiters {
					if !w.returned {
						live = append(live, w)
					}
				}
				if len(live) == 0 {
					rt.Skip("no waiter")
				}
				w := live[rapid.IntRange(0, len(live)-1).Draw(rt, "waiter")]
				w.cancel()
				select {
				case w.err = <-w.done:
					w.returned = true
				case <-time.After(modelWake):
					rt.Fatalf("a cancelled waiter did not return within %v", modelWake)
				}
				if w.err != nil && w.err != context.Canceled {
					rt.Fatalf("cancelled Await = %v", w.err)
				}
				check()
			},
		})
	})
}
