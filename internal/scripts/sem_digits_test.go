package scripts

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// TestSemScriptsAcrossADigitBoundaryOfTheServerClock: the semaphore's
// scripts compare expiries and tokens as decimal strings when they are of
// one length. On a server whose clock crosses 10^9 s (µs from 15 to 16
// digits, ms from 12 to 13), a permit whose expiry is past the boundary
// while now is before it, or both after, is released as in time or as
// expired by the clock, renewed through the boundary without a loss and
// with its keys outliving it, and the tokens keep rising — also when the
// clock steps back across the boundary.
func TestSemScriptsAcrossADigitBoundaryOfTheServerClock(t *testing.T) {
	srv, clock := redistest.StartShifted(t, 0)
	rc := srv.Client(t)
	ctx := context.Background()
	boundary := time.Unix(1_000_000_000, 0)
	// before sets the server's clock to lead before the boundary.
	before := func(lead time.Duration) { clock.Set(boundary.Add(-lead).Sub(time.Now())) }
	token := func(k *SemKeys, id, leaseMs string) uint64 {
		got, err := SemAcquire(ctx, rc, k, "3", 1, id, SemHorizonMs(leaseMs), "0", "publish")
		require.NoError(t, err)
		require.True(t, got.OK)
		return got.Token
	}
	release := func(k *SemKeys, id string) int64 {
		n, err := SemRelease(ctx, rc, k, id, "publish")
		require.NoError(t, err)
		return n
	}

	t.Run("expiry past the boundary, now before it", func(t *testing.T) {
		before(time.Second)
		k := semTestKeys("digits:in-time")
		token(k, "p1", "5000")
		assert.EqualValues(t, SemReleased, release(k, "p1"))
	})
	t.Run("both past the boundary, in time", func(t *testing.T) {
		before(300 * time.Millisecond)
		k := semTestKeys("digits:after-in-time")
		token(k, "p1", "2000")
		time.Sleep(500 * time.Millisecond)
		assert.EqualValues(t, SemReleased, release(k, "p1"))
	})
	t.Run("expired across the boundary", func(t *testing.T) {
		before(200 * time.Millisecond)
		k := semTestKeys("digits:expired")
		token(k, "p1", "300")
		time.Sleep(600 * time.Millisecond)
		assert.EqualValues(t, SemExpired, release(k, "p1"))
	})
	t.Run("expired before the boundary, released after it", func(t *testing.T) {
		before(300 * time.Millisecond)
		k := semTestKeys("digits:expired-before")
		token(k, "p1", "150") // its keys live 750 ms
		time.Sleep(400 * time.Millisecond)
		assert.EqualValues(t, SemExpired, release(k, "p1"))
	})
	t.Run("renewed through the boundary", func(t *testing.T) {
		const lease = 600
		before(1500 * time.Millisecond)
		k := semTestKeys("digits:renew")
		it := semAcquired(t, rc, k, "p7", strconv.Itoa(lease))
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(lease / 3 * time.Millisecond) {
			require.True(t, semRenewOnce(t, rc, strconv.Itoa(lease), it), "a renewal near the boundary lost the permit")
			left := score(t, rc, k, "p7") - serverMs(t, rc)
			assert.GreaterOrEqual(t, pttl(t, rc, k.Holders), left, "the holders zset outlives the permit")
			assert.GreaterOrEqual(t, pttl(t, rc, k.Permits), left, "the permits hash outlives the permit")
		}
		assert.EqualValues(t, SemReleased, release(k, "p7"))
	})
	t.Run("tokens rise across the boundary and back", func(t *testing.T) {
		k := semTestKeys("digits:tokens")
		before(50 * time.Millisecond)
		var last uint64
		for i := range 6 {
			if i == 3 {
				time.Sleep(100 * time.Millisecond) // past the boundary
			}
			got := token(k, "t"+strconv.Itoa(i), "60000")
			assert.Greater(t, got, last, "token %d", i)
			last = got
			assert.EqualValues(t, SemReleased, release(k, "t"+strconv.Itoa(i)))
		}
		before(time.Second) // back across it
		for i := range 3 {
			got := token(k, "b"+strconv.Itoa(i), "60000")
			assert.Greater(t, got, last, "token after the step back %d", i)
			last = got
			assert.EqualValues(t, SemReleased, release(k, "b"+strconv.Itoa(i)))
		}
	})
}

// TestSemPermitThroughAServerClockStepBack: the server's clock steps back
// an hour under a held permit. Renewals keep it (its expiry, now ahead of
// the clock, is never shortened, and is reported), its keys outlive it
// all along, an acquire beside it neither takes it back nor reuses a
// token, and its release answers in time.
func TestSemPermitThroughAServerClockStepBack(t *testing.T) {
	srv, clock := redistest.StartShifted(t, 0)
	rc := srv.Client(t)
	ctx := context.Background()
	const lease = 600
	k := semTestKeys("step:back")
	first, err := SemAcquire(ctx, rc, k, "3", 1, "p1", SemHorizonMs(strconv.Itoa(lease)), "0", "publish")
	require.NoError(t, err)
	require.True(t, first.OK)
	it := &RenewItem{Key: k.Holders, Owner: "p1"}
	require.True(t, semRenewOnce(t, rc, strconv.Itoa(lease), it))
	clock.Step(-time.Hour)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(lease / 3 * time.Millisecond) {
		require.True(t, semRenewOnce(t, rc, strconv.Itoa(lease), it), "the step back lost the permit")
		left := score(t, rc, k, "p1") - serverMs(t, rc)
		assert.GreaterOrEqual(t, pttl(t, rc, k.Holders), left, "the holders zset outlives the permit")
		assert.GreaterOrEqual(t, pttl(t, rc, k.Permits), left, "the permits hash outlives the permit")
	}
	second, err := SemAcquire(ctx, rc, k, "3", 1, "p2", SemHorizonMs(strconv.Itoa(lease)), "0", "publish")
	require.NoError(t, err)
	require.True(t, second.OK)
	assert.Greater(t, second.Token, first.Token, "a token issued again after the step back")
	assert.EqualValues(t, SemReleased, func() int64 { n, err := SemRelease(ctx, rc, k, "p1", "publish"); require.NoError(t, err); return n }())
	assert.EqualValues(t, SemReleased, func() int64 { n, err := SemRelease(ctx, rc, k, "p2", "publish"); require.NoError(t, err); return n }())
}
