package latch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// scriptCalls counts the scripts the server ran (EVALSHA, and EVAL after a
// NOSCRIPT).
func scriptCalls(t *testing.T, e *locktest.Env) int64 {
	return redistest.ScriptCalls(t, e.RC)
}

// awaitInBackground starts n Awaits on l and returns a channel that
// receives each one's result, and the time it returned.
type result struct {
	err error
	at  time.Time
}

func awaitInBackground(ctx context.Context, l *Latch, n int) (<-chan result, *sync.WaitGroup) {
	out := make(chan result, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.Await(ctx)
			out <- result{err: err, at: time.Now()}
		}()
	}
	return out, &wg
}

// waitersParked waits until n Awaits, started after the server had run
// base scripts, have each made their two checks (before and after joining
// the subscription): from then on they sleep until a message or the poll.
func waitersParked(t *testing.T, e *locktest.Env, base int64, n int) {
	t.Helper()
	eventually(t, 60*time.Second, func() bool { return scriptCalls(t, e)-base >= int64(2*n) },
		"every waiter checked the count twice")
}

func TestSetCountDownAwaitOnRedissonLayout(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	l := New(e.C, "job:7")
	msgs := e.Subscribe(t, "redisson_countdownlatch__channel__{job:7}", false)

	ok, err := l.TrySetCount(bg(), 2)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "1", <-msgs, "the new-count message")
	v, err := e.Do(t, "GET", "job:7").ToString()
	require.NoError(t, err)
	assert.Equal(t, "2", v, "a decimal string under the raw name")
	assert.EqualValues(t, -1, e.PTTL(t, "job:7"), "no expiry, as Redisson's")

	ok, err = New(e.C, "job:7").TrySetCount(bg(), 5)
	require.NoError(t, err)
	assert.False(t, ok, "a latch exists: TrySetCount changes nothing")
	n, err := l.Count(bg())
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)

	require.NoError(t, l.CountDown(bg()))
	n, err = l.Count(bg())
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	ctx, cancel := context.WithTimeout(bg(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, l.Await(ctx), context.DeadlineExceeded, "count 1: still closed")

	require.NoError(t, l.CountDown(bg()))
	assert.Equal(t, "0", <-msgs, "the zero-count message")
	assert.False(t, e.Exists(t, "job:7"), "at zero the key goes")
	require.NoError(t, l.Await(bg()))
	n, err = l.Count(bg())
	require.NoError(t, err)
	assert.Zero(t, n)

	require.NoError(t, l.CountDown(bg()), "counting down an open latch")
	assert.Zero(t, e.DBSize(t), "changes nothing")
	select {
	case m := <-msgs:
		t.Fatalf("an open latch counted down published %q", m)
	case <-time.After(50 * time.Millisecond):
	}

	ok, err = l.TrySetCount(bg(), 1)
	require.NoError(t, err)
	assert.True(t, ok, "an opened latch can be set again")
	deleted, err := l.Delete(bg())
	require.NoError(t, err)
	assert.True(t, deleted)
	assert.Equal(t, "1", <-msgs)
	assert.Equal(t, "0", <-msgs, "delete publishes the zero-count message")
	deleted, err = l.Delete(bg())
	require.NoError(t, err)
	assert.False(t, deleted)
	assert.Zero(t, e.DBSize(t))
}

// One CountDown from 1 to 0 releases a thousand waiters of one Client by
// one message: the poll is 30 s, so only the message explains a prompt
// return, and the Client keeps one subscription for all of them.
func TestThousandWaitersReleasedByOneCountDown(t *testing.T) {
	const waiters = 1000
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	l := New(e.C, "release:all")
	ok, err := l.TrySetCount(bg(), 1)
	require.NoError(t, err)
	require.True(t, ok)
	base := scriptCalls(t, e)
	results, wg := awaitInBackground(bg(), l, waiters)
	waitersParked(t, e, base, waiters)
	e.WaitSubscribed(t, l.keys.Channel)
	assert.EqualValues(t, 1, numSub(t, e, l.keys.Channel), "one subscription for every local waiter")

	start := time.Now()
	require.NoError(t, New(e.Client(t), "release:all").CountDown(bg()))
	var last time.Time
	for range waiters {
		select {
		case r := <-results:
			require.NoError(t, r.err)
			if r.at.After(last) {
				last = r.at
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a waiter was not released within 20 s (the poll is 30 s: its message was lost)")
		}
	}
	wg.Wait()
	t.Logf("%d waiters released %v after the CountDown", waiters, last.Sub(start))
}

func numSub(t *testing.T, e *locktest.Env, channel string) int64 {
	vals, err := e.Do(t, "PUBSUB", "NUMSUB", channel).ToArray()
	require.NoError(t, err)
	n, _ := vals[1].AsInt64()
	return n
}

// A latch whose key someone deletes without a message (DEL, FLUSHDB) is
// open: the waiter notices at its next poll.
func TestAwaitReturnsWhenTheKeyIsDeletedRaw(t *testing.T) {
	const poll = 200 * time.Millisecond
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	l := New(e.C, "raw:del", WithPoll(poll))
	_, err := l.TrySetCount(bg(), 3)
	require.NoError(t, err)
	base := scriptCalls(t, e)
	results, wg := awaitInBackground(bg(), l, 1)
	waitersParked(t, e, base, 1)
	start := time.Now()
	e.Do(t, "DEL", "raw:del")
	select {
	case r := <-results:
		require.NoError(t, r.err)
		t.Logf("returned %v after the DEL (poll %v)", r.at.Sub(start), poll)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not notice the deleted key")
	}
	wg.Wait()
}

// Foreign data under the name — a user's hash, list or non-numeric string,
// a lock — is reported as WRONGKIND by every method and left untouched;
// a lock refuses a latch's name in turn.
func TestForeignDataIsWrongKindAndUntouched(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(100*time.Millisecond))
	e.Do(t, "HSET", "f:hash", "a", "1")
	e.Do(t, "RPUSH", "f:list", "x")
	e.Do(t, "SET", "f:text", "hello")
	e.Do(t, "SET", "f:big", "123456789012345678901234")
	mu := rlock.New(e.C, "f:lock")
	require.NoError(t, mu.Lock(bg()))
	defer mu.Unlock(bg())
	for _, name := range []string{"f:hash", "f:list", "f:text", "f:big", "f:lock"} {
		before := snapshot(t, e)
		l := New(e.C, name)
		_, err := l.TrySetCount(bg(), 1)
		assertWrongKind(t, err, name, "TrySetCount")
		assertWrongKind(t, l.CountDown(bg()), name, "CountDown")
		_, err = l.Count(bg())
		assertWrongKind(t, err, name, "Count")
		_, err = l.Delete(bg())
		assertWrongKind(t, err, name, "Delete")
		assertWrongKind(t, l.Await(bg()), name, "Await")
		assert.Equal(t, before, snapshot(t, e), "%s untouched", name)
	}

	l := New(e.C, "f:latch")
	_, err := l.TrySetCount(bg(), 2)
	require.NoError(t, err)
	_, err = rlock.New(e.C, "f:latch").TryLock(bg())
	assert.ErrorIs(t, err, redisync.ErrWrongKind, "a lock on a latch's name")
	n, err := l.Count(bg())
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
}

// snapshot is every key with its serialized value (DUMP: type and
// contents, not the TTL, which runs down).
func snapshot(t *testing.T, e *locktest.Env) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range e.Keys(t) {
		v, err := e.Do(t, "DUMP", k).ToString()
		require.NoError(t, err)
		out[k] = v
	}
	return out
}

func assertWrongKind(t *testing.T, err error, name, op string) {
	t.Helper()
	var wk *redisync.WrongKindError
	if assert.ErrorAs(t, err, &wk, "%s on %s", op, name) {
		assert.Equal(t, name, wk.Key, "%s on %s", op, name)
	}
	assert.Contains(t, err.Error(), `latch "`+name+`"`, "the error names the latch")
}

// With the waiters' pub/sub connection killed and its subscription
// refused from then on (the ACL took the channel away), the CountDown's
// message cannot reach them: the poll still ends the wait.
func TestDroppedPubSubConnectionStillEndsTheWait(t *testing.T) {
	const poll = 300 * time.Millisecond
	e := setup(t)
	e.Do(t, "ACL", "SETUSER", "waiter", "reset", "on", ">pw", "~*", "&*", "+@all")
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{e.Srv.Addr()}, Username: "waiter", Password: "pw",
		DisableCache: true})
	require.NoError(t, err)
	defer rc.Close()
	c := redisync.New(rc, redisync.WithMaxPoll(poll))
	defer c.Close()
	l := New(c, "drop:sub")
	_, err = l.TrySetCount(bg(), 1)
	require.NoError(t, err)
	base := scriptCalls(t, e)
	results, wg := awaitInBackground(bg(), l, 20)
	waitersParked(t, e, base, 20)
	e.WaitSubscribed(t, l.keys.Channel)
	e.Do(t, "ACL", "SETUSER", "waiter", "resetchannels")
	e.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	eventually(t, 5*time.Second, func() bool { return numSub(t, e, l.keys.Channel) == 0 }, "the subscription gone")
	start := time.Now()
	require.NoError(t, New(e.C, "drop:sub").CountDown(bg()))
	for range 20 {
		select {
		case r := <-results:
			require.NoError(t, r.err)
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter hung after its subscription was killed")
		}
	}
	wg.Wait()
	t.Logf("released %v after the CountDown (poll %v)", time.Since(start), poll)
}

// A cancelled Await returns ctx's error at once and leaves nothing: no key
// written, and the subscription goes after its linger.
func TestCancelledAwaitLeavesNothingBehind(t *testing.T) {
	e := setup(t, redisync.WithMaxPoll(30*time.Second))
	l := New(e.C, "cancel:me")
	_, err := l.TrySetCount(bg(), 1)
	require.NoError(t, err)
	before := snapshot(t, e)
	ctx, cancel := context.WithCancel(bg())
	base := scriptCalls(t, e)
	results, wg := awaitInBackground(ctx, l, 10)
	waitersParked(t, e, base, 10)
	cancel()
	start := time.Now()
	for range 10 {
		r := <-results
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.False(t, errors.Is(r.err, redisync.ErrClosed))
	}
	wg.Wait()
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, before, snapshot(t, e), "the latch as it was, nothing added")
	eventually(t, 10*time.Second, func() bool { return numSub(t, e, l.keys.Channel) == 0 },
		"the subscription gone after its linger")
	// The hub forgets the channel when its receiver has returned, after
	// the server dropped the subscription: beside a second make test it
	// still counted 1 just after NUMSUB said 0.
	eventually(t, 5*time.Second, func() bool { return locktest.Engine(e.C).Hub.Channels() == 0 },
		"the hub's channel gone")
}

// Counts outside 1..MaxCount and unusable names are refused before any I/O.
func TestBadCountsAndNamesRefusedWithoutIO(t *testing.T) {
	e := setup(t)
	base := scriptCalls(t, e)
	l := New(e.C, "counts")
	for _, n := range []int64{0, -1, MaxCount + 1, 1<<63 - 1} {
		_, err := l.TrySetCount(bg(), n)
		assert.ErrorIs(t, err, ErrInvalidCount, "count %d", n)
	}
	for _, name := range []string{"", "redisync_lock_token:x"} {
		bad := New(e.C, name)
		_, err := bad.TrySetCount(bg(), 1)
		assert.ErrorIs(t, err, redisync.ErrInvalidName, name)
		assert.ErrorIs(t, bad.Await(bg()), redisync.ErrInvalidName, name)
	}
	assert.Equal(t, base, scriptCalls(t, e), "no script ran")
	assert.Zero(t, e.DBSize(t))
	e.C.Close()
	assert.ErrorIs(t, l.CountDown(bg()), redisync.ErrClosed)
	assert.Panics(t, func() { New(e.C, "x", WithPoll(0)) })
}

// An ACL that denies a write the script would make is NOPERM, naming it,
// with nothing written.
func TestDeniedWriteIsNopermWithNothingWritten(t *testing.T) {
	e := setup(t)
	e.Do(t, "ACL", "SETUSER", "nodel", "reset", "on", ">pw", "~*", "&*", "+@all", "-del")
	_, err := New(e.C, "acl:l").TrySetCount(bg(), 1)
	require.NoError(t, err)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{e.Srv.Addr()}, Username: "nodel", Password: "pw",
		DisableCache: true})
	require.NoError(t, err)
	defer rc.Close()
	c := redisync.New(rc)
	defer c.Close()
	err = New(c, "acl:l").CountDown(bg())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NOPERM")
	assert.Contains(t, err.Error(), "DEL")
	v, err := e.Do(t, "GET", "acl:l").ToString()
	require.NoError(t, err)
	assert.Equal(t, "1", v, "nothing written")
}
