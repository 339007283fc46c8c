package fairlock

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// A waiter granted by re-entry leaves the queue, as one granted at the head
// does: handles of one owner id nest (the kinds share the lock hash), so
// while a fair handle waits in the queue, an rlock handle of its owner may
// take the free lock (rlock does not queue), and the fair handle's next
// attempt re-enters that hold. Its place must go with that grant: a place
// left behind makes the next fair waiters wait on a free lock for the
// place's heartbeat to lapse (with WithRedissonQueue, for the queue's wait
// plus the lease).
//
// The queue's head is another process's waiter (its entry written here,
// heartbeat far ahead), so the fair handle cannot take the free lock and
// the rlock handle takes it without a race; the fair handle then tries
// again when the test publishes its wake-up.
func TestGrantByReentryTakesTheOwnersPlaceInTheQueue(t *testing.T) {
	for _, redisson := range []bool{false, true} {
		name := map[bool]string{false: "fair:reentry-queue", true: "fair:reentry-redisson-queue"}[redisson]
		t.Run(name, func(t *testing.T) {
			e := setup(t, redisync.WithMaxPoll(30*time.Second))
			opts := []Option{WithWaiterTimeout(30 * time.Second)}
			if redisson {
				opts = append(opts, WithRedissonQueue(2*time.Minute))
			}
			a := New(e.C, name, append(opts, WithOwner("job"))...)
			far := strconv.FormatInt(time.Now().Add(5*time.Minute).UnixMilli(), 10)
			queued := func(owner string) bool {
				if redisson {
					return e.Do(t, "LPOS", a.keys.Queue, owner).Error() == nil ||
						e.Do(t, "ZSCORE", a.keys.Heartbeats, owner).Error() == nil
				}
				return e.Do(t, "ZSCORE", a.keys.Queue, owner).Error() == nil ||
					e.Do(t, "ZSCORE", a.keys.Heartbeats, owner).Error() == nil
			}
			// The other process's waiter x heads the queue.
			if redisson {
				e.Do(t, "RPUSH", a.keys.Queue, "x")
				e.Do(t, "ZADD", a.keys.Heartbeats, far, "x")
			} else {
				e.Do(t, "ZADD", a.keys.Queue, "1", "x")
				e.Do(t, "ZADD", a.keys.Heartbeats, far, "x")
				e.Do(t, "PEXPIRE", a.keys.Queue, "300000")
				e.Do(t, "PEXPIRE", a.keys.Heartbeats, "300000")
			}
			leaves := func(owner string) {
				if redisson {
					e.Do(t, "LREM", a.keys.Queue, "0", owner)
				} else {
					e.Do(t, "ZREM", a.keys.Queue, owner)
				}
				e.Do(t, "ZREM", a.keys.Heartbeats, owner)
			}
			defer leaves("x")

			aDone := make(chan error, 1)
			go func() { aDone <- a.Lock(bg()) }()
			eventually(t, 5*time.Second, func() bool { return queued("job") }, "a queued behind x")
			b := rlock.New(e.C, name, rlock.WithOwner("job"))
			require.NoError(t, b.Lock(bg()), "rlock takes the free lock past the queue")
			// a polls while it waits (the lock is free, x ahead of it), so
			// it may re-enter b's hold before the wake-up below: 1 or 2.
			require.Contains(t, []int64{1, 2}, e.Int(t, "HGET", name, "job"))

			channel := a.keys.WaiterChannel("job")
			eventually(t, 5*time.Second, func() bool {
				e.Do(t, "PUBLISH", channel, "0")
				return len(aDone) == 1
			}, "a re-enters b's hold")
			require.NoError(t, <-aDone)
			assert.Equal(t, int64(2), e.Int(t, "HGET", name, "job"), "a nests into b's hold")
			assert.False(t, queued("job"), "a's place goes with its grant: %s", e.Describe(t))
			assert.True(t, queued("x"), "x keeps its place")

			require.NoError(t, b.Unlock(bg()))
			require.NoError(t, a.Unlock(bg()))
			leaves("x")
			c := New(e.C, name, opts...)
			ok, err := c.TryLock(bg())
			require.NoError(t, err)
			assert.True(t, ok, "once x has left, the free lock goes to the next fair caller at once: %s", e.Describe(t))
			if ok {
				require.NoError(t, c.Unlock(bg()))
			}
		})
	}
}
