package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// Clock steps on Redlock nodes (issue 17, the guarantee matrix's Redlock
// row): a node's clock stepping forward past the lease expires the lock's
// key there at once (Redis keeps expiries as absolute times), which is that
// node losing the key.

// clockStepForward is how far a stepped node's clock jumps: far past any
// lease here, far below the fencing counters' one-day expiry.
const clockStepForward = time.Minute

// shiftedMasters starts five independent masters, the first shifted of
// them with a steppable clock (redistest.StartShifted), and one Client on
// each with the given watchdog timeout.
func shiftedMasters(t *testing.T, shifted int, lease time.Duration) (*masters, []*redistest.Clock) {
	t.Helper()
	const n = 5
	m := &masters{}
	var clocks []*redistest.Clock
	for range shifted {
		s, c := redistest.StartShifted(t, 0)
		m.srv = append(m.srv, s)
		clocks = append(clocks, c)
	}
	m.srv = append(m.srv, redistest.StartN(t, n-shifted)...)
	for _, s := range m.srv {
		m.raw = append(m.raw, s.Client(t))
	}
	m.clients = m.newClients(t, redisync.WithWatchdogTimeout(lease))
	return m, clocks
}

// exists reports whether key exists on node i (EXISTS also deletes a key
// that expired by the node's clock, as any access does).
func (m *masters) exists(t *testing.T, i int, key string) bool {
	n, err := redistest.Do(t, m.raw[i], "EXISTS", key).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// TestClockStepOnAMinorityKeepsTheHoldAndTokensRise: on five masters, one
// node's clock and then a second one's step forward past the lease during
// a hold. The key expires on those nodes, but the holder keeps its quorum
// (4 of 5, then 3 of 5): another client cannot get the lock, and the
// holder's renewals carry on and never report a loss (nor re-create the
// key on the stepped nodes). Tokens keep rising across the grants that
// follow — the stepped nodes' readings are a minute ahead, so the tokens
// jump — and when those nodes' clocks then step back two minutes, a later
// grant still gets a higher token: every node's clock now reads below the
// last token, and phase 2's counters carry it.
func TestClockStepOnAMinorityKeepsTheHoldAndTokensRise(t *testing.T) {
	// Parallel: its own servers, name and Clients.
	t.Parallel()
	// A 1.5 s lease renewed every 500 ms: a loaded machine stalls a round
	// for hundreds of ms, well within it (renewal_redlock_test.go found 900
	// ms too short beside a second make test). The node timeout is a quarter
	// of the lease, so a slow node still answers phase 1 in time.
	const lease, name = 1500 * time.Millisecond, "clock-step:minority"
	ms, clocks := shiftedMasters(t, 2, lease)
	newMutex := func(clients []*redisync.Client) *Mutex {
		return New(clients, name, WithNodeTimeout(lease/4), WithRetryDelay(time.Millisecond, 5*time.Millisecond))
	}
	a := newMutex(ms.clients)
	require.NoError(t, a.Lock(bg()))
	last := a.Token()
	b := newMutex(ms.newClients(t, redisync.WithWatchdogTimeout(lease)))

	for stepped := 1; stepped <= len(clocks); stepped++ {
		clocks[stepped-1].Step(clockStepForward)
		for i := range stepped {
			assert.False(t, ms.exists(t, i, name), "%d stepped: the key expired on stepped node %d", stepped, i)
		}
		ok, err := b.TryLock(bg())
		require.NoError(t, err, "%d stepped", stepped)
		assert.False(t, ok, "%d of 5 nodes stepped: the holder's quorum holds, nobody else gets in", stepped)
		// Two renewal periods: the holder's renewals have met the stepped
		// nodes at least once (a lower bound; a stall only adds rounds).
		time.Sleep(2 * lease / 3)
		require.NoError(t, a.Err(), "%d stepped: no loss reported", stepped)
		select {
		case <-a.Done():
			t.Fatalf("%d stepped: the hold ended", stepped)
		default:
		}
		for i := range stepped {
			assert.False(t, ms.exists(t, i, name), "%d stepped: node %d: a renewal never re-creates a key (nor is the contender's grant left there)", stepped, i)
		}
		assert.Equal(t, 5-stepped, ms.held(t, name), "%d stepped: the other nodes keep the hold", stepped)
		ok, err = b.TryLock(bg())
		require.NoError(t, err)
		assert.False(t, ok, "%d stepped: still nobody else after the renewals", stepped)
	}
	require.NoError(t, a.Unlock(bg()))

	// Grants after the steps: tokens strictly rise, whoever holds.
	grant := func(m *Mutex, what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
		defer cancel()
		require.NoError(t, m.Lock(ctx), what)
		require.Greater(t, m.Token(), last, "%s: the token must rise", what)
		last = m.Token()
		require.NoError(t, m.Unlock(bg()), what)
	}
	for range 3 {
		grant(b, "after the steps forward, b")
		grant(a, "after the steps forward, a")
	}
	// The stepped nodes' readings were a minute ahead: the last token is
	// above every node's clock once they step back (checked, so that the
	// rise below is not vacuous).
	ahead := uint64(time.Now().Add(clockStepForward / 2).UnixMicro())
	require.Greater(t, last, ahead, "setup: the last token came from a clock a minute ahead")
	for _, c := range clocks {
		c.Step(-2 * clockStepForward)
	}
	for range 3 {
		grant(b, "after the steps back, b")
		grant(a, "after the steps back, a")
	}
	assert.Zero(t, ms.held(t, name))
}

// TestClockStepOnAMajorityLosesTheHoldAndTheHolderIsTold: when three of
// five nodes step forward past the lease, the holder's key is gone from a
// majority, so the lock is lost: another client gets it at once, before
// the holder can know (a Redlock cannot survive a majority of clocks
// jumping), with a higher token; the holder is told at its next renewal,
// within a renewal interval of the step — not when its lease would have run
// out unconfirmed.
func TestClockStepOnAMajorityLosesTheHoldAndTheHolderIsTold(t *testing.T) {
	// Parallel: its own servers, name and Clients.
	t.Parallel()
	// A 4.5 s lease is renewed every 1.5 s. The step is made right after a
	// renewal (seen on an unstepped node's PTTL), so the holder's next
	// renewal comes about 1.5 s later, while its lease would run out
	// unconfirmed only about 4.2 s later. The bound below (renewal interval
	// + 1.5 s for a loaded 2-core machine's stalls) lies between the two.
	const lease, name = 4500 * time.Millisecond, "clock-step:majority"
	const interval = lease / 3
	ms, clocks := shiftedMasters(t, 3, lease)
	a := New(ms.clients, name, WithNodeTimeout(lease/8))
	require.NoError(t, a.Lock(bg()))
	before := a.Token()

	waitRenewed(t, ms.raw[len(ms.raw)-1], name, lease)
	stepped := time.Now()
	for _, c := range clocks {
		c.Step(clockStepForward)
	}
	// b's node timeout is wide (1.5 s, not a's 560 ms): it needs all three
	// stepped nodes' grants, and at 560 ms one came too late once beside a
	// loaded make test, so b got two and was refused.
	b := New(ms.newClients(t, redisync.WithWatchdogTimeout(lease)), name, WithNodeTimeout(lease/3))
	ok, err := b.TryLock(bg())
	require.NoError(t, err)
	require.True(t, ok, "the key expired on a majority: another client gets the lock (exclusion lost)")
	assert.Greater(t, b.Token(), before, "the new grant's token is higher")

	select {
	case <-a.Done():
		t.Logf("the holder was told %v after the step", time.Since(stepped).Round(time.Millisecond))
	case <-time.After(time.Until(stepped.Add(interval + 1500*time.Millisecond))):
		t.Fatalf("the holder was not told within its next renewal (%v after the step)", time.Since(stepped))
	}
	require.ErrorIs(t, a.Err(), redisync.ErrLockLost)
	require.ErrorIs(t, a.Unlock(bg()), redisync.ErrLockLost)
	require.NoError(t, b.Err(), "the new holder keeps it")
	require.NoError(t, b.Unlock(bg()))
	assert.Zero(t, ms.held(t, name))
}

// waitRenewed returns right after key's expiry on the node of rc was
// renewed: its PTTL first drops a third of the lease below the lease, then
// rises back near it.
func waitRenewed(t *testing.T, rc rueidis.Client, key string, lease time.Duration) {
	t.Helper()
	pttl := func() time.Duration {
		ms, err := redistest.Do(t, rc, "PTTL", key).AsInt64()
		require.NoError(t, err)
		require.Positive(t, ms, "setup: the key exists")
		return time.Duration(ms) * time.Millisecond
	}
	deadline := time.Now().Add(2 * lease)
	for pttl() > lease-lease/4 {
		require.True(t, time.Now().Before(deadline), "setup: the lease ran down")
		time.Sleep(10 * time.Millisecond)
	}
	for pttl() < lease-lease/6 {
		require.True(t, time.Now().Before(deadline), "setup: a renewal came")
		time.Sleep(10 * time.Millisecond)
	}
}
