package fairlock

import (
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
// take the freed lock (rlock does not queue), and the fair handle's next
// attempt re-enters that hold. Its place must go with that grant: a place
// left at the head makes the next fair waiter wait on a free lock for the
// place's heartbeat to lapse (with WithRedissonQueue, for the queue's wait
// plus the lease).
//
// The holder before is an rlock handle, whose release wakes nobody in the
// fair queue, and the waiter's heartbeat is 10 s away: the rlock handle of
// the owner takes the lock before the waiter tries again, which it does
// when the test publishes the head's wake-up.
func TestGrantByReentryTakesTheOwnersPlaceInTheQueue(t *testing.T) {
	for _, redisson := range []bool{false, true} {
		name := map[bool]string{false: "fair:reentry-queue", true: "fair:reentry-redisson-queue"}[redisson]
		t.Run(name, func(t *testing.T) {
			e := setup(t, redisync.WithMaxPoll(30*time.Second))
			opts := []Option{WithWaiterTimeout(30 * time.Second)}
			if redisson {
				opts = append(opts, WithRedissonQueue(2*time.Minute))
			}
			queued := func(m *Mutex, owner string) bool {
				if redisson {
					return e.Do(t, "LPOS", m.keys.Queue, owner).Error() == nil ||
						e.Do(t, "ZSCORE", m.keys.Heartbeats, owner).Error() == nil
				}
				return e.Do(t, "ZSCORE", m.keys.Queue, owner).Error() == nil ||
					e.Do(t, "ZSCORE", m.keys.Heartbeats, owner).Error() == nil
			}

			before := rlock.New(e.C, name)
			require.NoError(t, before.Lock(bg()))
			a := New(e.C, name, append(opts, WithOwner("job"))...)
			aDone := make(chan error, 1)
			go func() { aDone <- a.Lock(bg()) }()
			eventually(t, 5*time.Second, func() bool { return queued(a, "job") }, "a queued")

			require.NoError(t, before.Unlock(bg()))
			b := rlock.New(e.C, name, rlock.WithOwner("job"))
			require.NoError(t, b.Lock(bg()))
			require.Equal(t, int64(1), e.Int(t, "HGET", name, "job"), "b took the free lock before a tried again")
			require.True(t, queued(a, "job"), "a still queued")

			channel := a.keys.WaiterChannel("job")
			eventually(t, 5*time.Second, func() bool {
				e.Do(t, "PUBLISH", channel, "0")
				return len(aDone) == 1
			}, "a re-enters b's hold")
			require.NoError(t, <-aDone)
			assert.Equal(t, int64(2), e.Int(t, "HGET", name, "job"), "a nests into b's hold")
			assert.False(t, queued(a, "job"), "a's place goes with its grant: %s", e.Describe(t))

			require.NoError(t, b.Unlock(bg()))
			require.NoError(t, a.Unlock(bg()))
			c := New(e.C, name, opts...)
			ok, err := c.TryLock(bg())
			require.NoError(t, err)
			assert.True(t, ok, "the free lock goes to the next fair caller at once: %s", e.Describe(t))
			if ok {
				require.NoError(t, c.Unlock(bg()))
			}
		})
	}
}
