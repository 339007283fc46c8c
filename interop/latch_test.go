//go:build interop

package interop

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
)

// node-redisson 1.0.4 has no countdown latch: these tests run against
// Redisson (Java) only.

// latchChannel is Redisson's RCountDownLatch channel for name: braces
// around the name, whatever it holds (no "contains '{'" rule here).
func latchChannel(name string) string { return "redisson_countdownlatch__channel__{" + name + "}" }

// scriptCalls counts the scripts the shared server ran.
func scriptCalls(t *testing.T) int64 {
	rc := srv.Client(t)
	return redistest.ScriptCalls(t, rc)
}

// goAwait starts a Go Await on name and returns once it has checked the
// count twice (before and after its subscription was confirmed), so only a
// message or the 30 s poll can end it; the channel gets its result.
func goAwait(t *testing.T, l *latch.Latch) <-chan error {
	t.Helper()
	base := scriptCalls(t)
	done := make(chan error, 1)
	go func() { done <- l.Await(context.Background()) }()
	deadline := time.Now().Add(answerTimeout)
	for scriptCalls(t)-base < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("interop: the Go waiter on %s did not park", l.Name())
		}
		time.Sleep(5 * time.Millisecond)
	}
	awaitSubscribers(t, latchChannel(l.Name()), 1)
	return done
}

// javaAwait starts a Redisson await of up to wait on name and returns once
// it has subscribed and read the count after subscribing (GET), so only a
// message or its timeout can end it.
func javaAwait(t *testing.T, name string, wait time.Duration) <-chan answer {
	t.Helper()
	rc := srv.Client(t)
	base := redistest.CommandCalls(t, rc, "get")
	ch := java.send(t, "latchawait", name, ms(wait))
	awaitSubscribers(t, latchChannel(name), 1)
	deadline := time.Now().Add(answerTimeout)
	for redistest.CommandCalls(t, rc, "get")-base < 2 { // before and after subscribing
		if time.Now().After(deadline) {
			t.Fatalf("interop: Redisson's await on %s did not read the count", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ch
}

func goWoken(t *testing.T, done <-chan error, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: Go Await: %v", what, err)
		}
	case <-time.After(wakeWithin):
		t.Fatalf("%s: the Go waiter was not woken within %v (its poll is %v)", what, wakeWithin, maxPoll)
	}
	return time.Since(start)
}

// TestLatchCountsBothWays: a latch set, counted down, read or deleted by
// either library is the same latch to the other.
func TestLatchCountsBothWays(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	for _, name := range names(t, java) {
		l := latch.New(c, name)
		count := func(want int64, what string) {
			t.Helper()
			if n, err := l.Count(ctx); err != nil || n != want {
				t.Fatalf("%s: %s: Go Count = %d, %v; want %d", name, what, n, err, want)
			}
			if got := java.mustOK(t, "latchcount", name); got != itoa(want) {
				t.Fatalf("%s: %s: Redisson getCount = %s; want %d", name, what, got, want)
			}
		}
		if got := java.mustOK(t, "latchset", name, "3"); got != "true" {
			t.Fatalf("%s: Redisson trySetCount = %s", name, got)
		}
		count(3, "set by Redisson")
		if ok, err := l.TrySetCount(ctx, 5); err != nil || ok {
			t.Fatalf("%s: Go TrySetCount on Redisson's latch = %v, %v; want false", name, ok, err)
		}
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		count(2, "counted down by Go")
		if got := java.mustOK(t, "latchset", name, "9"); got != "false" {
			t.Fatalf("%s: Redisson trySetCount on an existing latch = %s", name, got)
		}
		java.mustOK(t, "latchdown", name)
		count(1, "counted down by Redisson")
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		count(0, "opened by Go")
		if ok, err := l.TrySetCount(ctx, 2); err != nil || !ok {
			t.Fatalf("%s: Go TrySetCount after zero = %v, %v", name, ok, err)
		}
		count(2, "set by Go")
		java.mustOK(t, "latchdown", name)
		java.mustOK(t, "latchdown", name)
		count(0, "opened by Redisson")
		if ok, err := l.TrySetCount(ctx, 4); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if got := java.mustOK(t, "latchdelete", name); got != "true" {
			t.Fatalf("%s: Redisson delete of Go's latch = %s", name, got)
		}
		count(0, "deleted by Redisson")
		java.mustOK(t, "latchset", name, "4")
		if ok, err := l.Delete(ctx); err != nil || !ok {
			t.Fatalf("%s: Go Delete of Redisson's latch = %v, %v", name, ok, err)
		}
		count(0, "deleted by Go")
		assertGone(t, name)
	}
}

// TestLatchWakesAcrossLibraries: the CountDown to zero of one library
// wakes the other's waiters through Redisson's channel, promptly (the Go
// waiter's poll is 30 s; Redisson's await waits on its subscription), and
// so does a Delete.
func TestLatchWakesAcrossLibraries(t *testing.T) {
	c := goClient(t)
	ctx := context.Background()
	for _, base := range names(t, java) {
		// Redisson waits, Go counts down to zero.
		name := base + ":java-waits"
		l := latch.New(c, name)
		if _, err := l.TrySetCount(ctx, 2); err != nil {
			t.Fatal(err)
		}
		wait := javaAwait(t, name, time.Minute)
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-wait:
			t.Fatalf("%s: Redisson's await returned at count 1: %v", name, a)
		case <-time.After(200 * time.Millisecond):
		}
		start := time.Now()
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if a := java.await(t, wait, wakeWithin, "latchawait "+name); !a.ok || a.result != "true" {
			t.Fatalf("%s: Redisson await after Go's CountDown: %v", name, a)
		}
		t.Logf("%s: Redisson's await woken %v after Go's CountDown", name, time.Since(start))

		// Go waits, Redisson counts down to zero.
		name = base + ":go-waits"
		l = latch.New(c, name)
		java.mustOK(t, "latchset", name, "1")
		done := goAwait(t, l)
		java.mustOK(t, "latchdown", name)
		t.Logf("%s: Go's Await woken %v after Redisson's countDown", name, goWoken(t, done, name))

		// Go deletes (publishing "0"): Redisson's await returns.
		name = base + ":go-deletes"
		l = latch.New(c, name)
		if _, err := l.TrySetCount(ctx, 3); err != nil {
			t.Fatal(err)
		}
		wait = javaAwait(t, name, time.Minute)
		if ok, err := l.Delete(ctx); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if a := java.await(t, wait, wakeWithin, "latchawait "+name); !a.ok || a.result != "true" {
			t.Fatalf("%s: Redisson await after Go's Delete: %v", name, a)
		}

		// Redisson deletes (publishing "1"): Go's Await returns.
		name = base + ":java-deletes"
		l = latch.New(c, name)
		java.mustOK(t, "latchset", name, "3")
		done = goAwait(t, l)
		java.mustOK(t, "latchdelete", name)
		goWoken(t, done, name)
		assertGone(t, base+":java-waits", base+":go-waits", base+":go-deletes", base+":java-deletes")
	}
}

// TestLatchRedissonDeleteLeavesRedissonAwaitAsleep records the Redisson
// behaviour the latch package doc names: Redisson's own delete publishes
// "1", which does not end a Redisson await; its timeout does. (Our Delete
// publishes "0" instead: TestLatchWakesAcrossLibraries.)
func TestLatchRedissonDeleteLeavesRedissonAwaitAsleep(t *testing.T) {
	name := "x:" + t.Name()
	java.mustOK(t, "latchset", name, "3")
	const timeout = 3 * time.Second
	wait := javaAwait(t, name, timeout)
	start := time.Now()
	java.mustOK(t, "latchdelete", name)
	a := java.await(t, wait, answerTimeout, "latchawait "+name)
	took := time.Since(start)
	t.Logf("Redisson's await after Redisson's delete: %v after %v", a.result, took)
	if took < timeout/2 {
		t.Fatalf("Redisson's await returned %v after Redisson's delete: the package doc says it sleeps on", took)
	}
	assertGone(t, name)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
