package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
)

// The loss signal's bound depends on how the hold was lost. Expiry (a
// renewal that cannot be confirmed) is signalled before the lease can run
// out on the server, so before anyone can get in through expiry. A key that
// vanishes by other means — DEL, FLUSHALL, a restart without persistence —
// is noticed only by the next renewal: within lease/3 (the renewal
// interval) plus one round trip. In that window another client can take the
// lock before the old holder is told; the fencing token is what protects
// the resource then. This test measures both numbers for each cause and
// checks the documented bound.
func TestVanishedKeyIsSignalledWithinARenewalInterval(t *testing.T) {
	const lease = 1200 * time.Millisecond
	// One renewal interval plus a round trip and a generous margin for a
	// loaded 2-core machine (the batching window may renew up to lease/6
	// early, which only shortens the wait).
	bound := lease/3 + 400*time.Millisecond
	causes := []struct {
		name   string
		vanish func(e *locktest.Env, t *testing.T, key string)
	}{
		{"DEL", func(e *locktest.Env, t *testing.T, key string) { e.Do(t, "DEL", key) }},
		{"FLUSHALL", func(e *locktest.Env, t *testing.T, _ string) { e.Do(t, "FLUSHALL") }},
		{"restart without persistence", func(e *locktest.Env, _ *testing.T, _ string) { e.Srv.Restart() }},
	}
	for _, cause := range causes {
		t.Run(cause.name, func(t *testing.T) {
			e := setup(t, redisync.WithWatchdogTimeout(lease), redisync.WithMaxPoll(10*time.Millisecond))
			key := "loss:" + cause.name
			holder := New(e.C, key)
			require.NoError(t, holder.Lock(bg()))
			done := holder.Done()

			// Let the first renewal pass, so the fault lands mid-interval
			// as it would in production.
			time.Sleep(lease / 2)
			cause.vanish(e, t, key)
			vanished := time.Now()

			// Another Client polls for the lock meanwhile.
			other := New(e.Client(t), key)
			var otherIn, told time.Duration
			deadline := time.After(lease + bound)
			for told == 0 || otherIn == 0 {
				select {
				case <-done:
					if told == 0 {
						told = time.Since(vanished)
					}
				case <-deadline:
					t.Fatalf("after %v: holder told %v, other client in %v", lease+bound, told, otherIn)
				default:
				}
				if otherIn == 0 {
					if ok, err := other.TryLock(bg()); err == nil && ok {
						otherIn = time.Since(vanished)
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			t.Logf("%s: holder told %v after the key vanished; another client got in %v after (window %v)",
				cause.name, told.Round(time.Millisecond), otherIn.Round(time.Millisecond), (told - otherIn).Round(time.Millisecond))
			assert.LessOrEqual(t, told, bound, "loss not signalled within lease/3 + a round trip")
			assert.ErrorIs(t, holder.Err(), redisync.ErrLockLost)
			// The other client's hold is real and keeps its fencing order.
			assert.NoError(t, other.Unlock(bg()))
			assert.ErrorIs(t, holder.Unlock(bg()), redisync.ErrLockLost)
		})
	}
}
