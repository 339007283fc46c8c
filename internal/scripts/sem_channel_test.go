package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// TestSemScriptsWakeTheWaiterOnItsChannel: the semaphore's scripts get no
// channel (sem_channel names it from the queue's key), and still wake the
// queue's head on the channel its waiter listens on, SemKeys.Channel's
// (keys.Derived), for a plain name and names with a hash tag: the release
// and the force release each wake the waiter queued behind the holder.
func TestSemScriptsWakeTheWaiterOnItsChannel(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	ctx := context.Background()
	for _, name := range []string{"wake:plain", "{wake:tag}x", "a{wake:b}c"} {
		for _, force := range []bool{false, true} {
			k := semTestKeys(name)
			semAcquired(t, rc, k, "p1", "60000")
			got, err := SemAcquire(ctx, rc, k, "3", 3, "w1", SemHorizonMs("60000"), "10000", "publish")
			require.NoError(t, err)
			require.False(t, got.OK, "w1 waits: two of three permits free")
			msgs := subscribe(t, srv.Client(t), k.WaiterPrefix()+"w1")
			if force {
				_, err = SemForceRelease(ctx, rc, k, "publish")
			} else {
				_, err = SemRelease(ctx, rc, k, "p1", "publish")
			}
			require.NoError(t, err)
			select {
			case m := <-msgs:
				assert.Equal(t, "0", m, "%s (force %v)", name, force)
			case <-time.After(5 * time.Second):
				t.Fatalf("%s (force %v): no wake-up on %s", name, force, k.WaiterPrefix()+"w1")
			}
			redistest.Do(t, rc, "DEL", k.Sem, k.Holders, k.Permits, k.Queue, k.Heartbeats)
		}
	}
}

// subscribe returns the messages published on channel from its
// subscription on until the test ends.
func subscribe(t *testing.T, rc rueidis.Client, channel string) <-chan string {
	t.Helper()
	msgs := make(chan string, 16)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hctx := rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) { close(ready) })
		_ = rc.Receive(hctx, rc.B().Subscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) { msgs <- m.Message })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not confirmed")
	}
	return msgs
}

// TestSemReleaseTakesBackAPermitTheHashDoesNotCount: the common release
// deletes both keys when the permits hash counts its permit alone, even if
// the holders zset holds another permit (only an eviction of the hash, or
// a foreign write, leaves one there), and that permit's renewal then
// reports it lost (docs/guarantees.md, "Semaphore: the common release").
func TestSemReleaseTakesBackAPermitTheHashDoesNotCount(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	ctx := context.Background()
	k := semTestKeys("release:uncounted")
	semAcquired(t, rc, k, "p1", "60000")
	redistest.Do(t, rc, "ZADD", k.Holders, "99999999999999", "p2")
	got, err := SemRelease(ctx, rc, k, "p1", "publish")
	require.NoError(t, err)
	assert.Equal(t, int64(SemReleased), got)
	n, err := redistest.Do(t, rc, "EXISTS", k.Holders, k.Permits).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "both keys deleted")
	assert.False(t, semRenewOnce(t, rc, "60000", &RenewItem{Key: k.Holders, Owner: "p2"}), "the uncounted permit is lost")
}
