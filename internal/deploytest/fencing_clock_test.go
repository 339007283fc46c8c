package deploytest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// tokenKind is a primitive that issues fencing tokens: acquire takes a hold
// on name and returns its token and its release.
type tokenKind struct {
	name    string
	acquire func(t *testing.T, c *redisync.Client, name string) (uint64, func())
	// lastKey: the kind keeps its last token in the last-token key after a
	// release (lib.lua's keep_token), not for good (the semaphore keeps it
	// in its configuration hash, which has no expiry).
	lastKey bool
}

func tokenKinds() []tokenKind {
	bg := context.Background()
	locker := func(l redisync.Locker, t *testing.T) (uint64, func()) {
		require.NoError(t, l.Lock(bg))
		return l.Token(), func() { require.NoError(t, l.Unlock(bg)) }
	}
	return []tokenKind{
		{"rlock", func(t *testing.T, c *redisync.Client, n string) (uint64, func()) {
			return locker(rlock.New(c, n), t)
		}, true},
		{"fairlock", func(t *testing.T, c *redisync.Client, n string) (uint64, func()) {
			return locker(fairlock.New(c, n), t)
		}, true},
		{"rwlock-write", func(t *testing.T, c *redisync.Client, n string) (uint64, func()) {
			return locker(rwlock.New(c, n).WriteLocker(), t)
		}, true},
		{"rwlock-read", func(t *testing.T, c *redisync.Client, n string) (uint64, func()) {
			return locker(rwlock.New(c, n).ReadLocker(), t)
		}, true},
		{"semaphore", func(t *testing.T, c *redisync.Client, n string) (uint64, func()) {
			p, err := semaphore.New(c, n, 1).Acquire(bg, 1)
			require.NoError(t, err)
			return p.Token(), func() { require.NoError(t, p.Release(bg)) }
		}, false},
	}
}

// TestFencingTokensRiseAcrossClockSteps: on one server whose clock steps
// back 5 s and forward, every kind's tokens keep rising — a step back right
// after a release, a step back during a hold followed by more than 1 s
// before the next grant (the last-token key lives until the clock passes
// the token, not 1 s as before), a step forward, and a gap longer than a
// step back. The last phase shows the documented limit: once the last-token
// key has expired (the clock read 10 s past the release), a step back
// larger than the clock time since the last grant yields a lower token for
// the kinds that keep it there (the semaphore keeps it for good).
func TestFencingTokensRiseAcrossClockSteps(t *testing.T) {
	srv, clock := redistest.StartShifted(t, 0)
	c := redisync.New(srv.Client(t))
	defer c.Close()
	kinds := tokenKinds()
	last := make([]uint64, len(kinds))
	held := make([]func(), len(kinds))
	grantAll := func(phase string, hold bool, rise bool) {
		t.Helper()
		for i, k := range kinds {
			tok, release := k.acquire(t, c, "clock:"+k.name)
			if rise || !k.lastKey {
				require.Greater(t, tok, last[i], "%s: %s: token must rise", phase, k.name)
			} else {
				require.Less(t, tok, last[i], "%s: %s: the documented limit", phase, k.name)
			}
			last[i] = tok
			if hold {
				held[i] = release
			} else {
				release()
			}
		}
	}
	releaseAll := func() {
		for _, r := range held {
			r()
		}
	}
	step := 5 * time.Second
	keep := 10 * time.Second // lib.lua's KEEP_TOKEN_MS

	grantAll("first", false, true)
	clock.Step(-step)
	grantAll("step back right after the release", true, true)
	clock.Step(-step) // during the hold
	releaseAll()
	// A lower bound on the gap (a stall only makes it longer): past the 1 s
	// the last token was kept before issue 17.
	time.Sleep(1200 * time.Millisecond)
	grantAll("step back during the hold, more than 1 s before the next grant", false, true)
	clock.Step(3 * step)
	grantAll("step forward", false, true)
	clock.Step(keep + time.Second) // the last-token keys expire
	clock.Step(-time.Second)
	grantAll("a step back shorter than the clock time since the last grant", false, true)
	clock.Step(keep + time.Second)
	// Redis deletes an expired key when it is touched (or by its sampling
	// expiry cycle); a step back before that would revive it. SCAN touches
	// every key.
	redistest.Do(t, srv.Client(t), "SCAN", "0", "COUNT", "1000")
	clock.Step(-(keep + 2*time.Second + step))
	grantAll("a step back larger than the clock time since the last grant, after the last-token key expired", false, false)
}

// TestFencingTokensRiseAcrossFailoverToReplicaBehind: a grant on a master,
// its release, then a promoted replica whose clock is 5 s behind grants the
// next hold, more than 1 s after the release: its token is higher (the
// last-token key reaches the replica with the master's absolute expiry,
// which the replica's slower clock reaches later still).
func TestFencingTokensRiseAcrossFailoverToReplicaBehind(t *testing.T) {
	master := redistest.Start(t)
	// Setup: the first sync starts at once (the default waits 5 s for more
	// replicas).
	redistest.Do(t, master.Client(t), "CONFIG", "SET", "repl-diskless-sync-delay", "0")
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica, _ := redistest.StartShifted(t, -5*time.Second, "--replicaof", host, port)
	mrc, rrc := master.Client(t), replica.Client(t)
	require.Eventually(t, func() bool {
		info, err := redistest.Do(t, rrc, "INFO", "replication").ToString()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 30*time.Second, 50*time.Millisecond, "setup: replica linked")

	mc := redisync.New(mrc)
	defer mc.Close()
	kinds := tokenKinds()
	last := make([]uint64, len(kinds))
	for i, k := range kinds {
		tok, release := k.acquire(t, mc, "failover:"+k.name)
		release()
		last[i] = tok
	}
	n, err := redistest.Do(t, mrc, "WAIT", "1", "5000").AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "setup: the replica acknowledged the writes")
	time.Sleep(1200 * time.Millisecond) // past the last-token key's 1 s minimum
	redistest.Do(t, rrc, "REPLICAOF", "NO", "ONE")

	rc := redisync.New(rrc)
	defer rc.Close()
	for i, k := range kinds {
		tok, release := k.acquire(t, rc, "failover:"+k.name)
		release()
		require.Greater(t, tok, last[i], "%s: the promoted replica's token must be higher", k.name)
	}
}

// TestClockStepForwardExpiresAHoldAndTheHolderIsTold: Redis keeps a key's
// expiry as an absolute time, so a server clock stepping forward by more
// than the remaining lease expires a held lock at once: another Client
// takes it (with a higher token) before the holder knows, and the holder is
// told at its next renewal. Exclusion does not survive such a step; the
// fencing token does.
func TestClockStepForwardExpiresAHoldAndTheHolderIsTold(t *testing.T) {
	srv, clock := redistest.StartShifted(t, 0)
	bg := context.Background()
	// Renewed every 500 ms: the holder hears within about that.
	holder := redisync.New(srv.Client(t), redisync.WithWatchdogTimeout(1500*time.Millisecond))
	defer holder.Close()
	m := rlock.New(holder, "step:forward")
	require.NoError(t, m.Lock(bg))
	clock.Step(time.Minute)

	other := redisync.New(srv.Client(t))
	defer other.Close()
	o := rlock.New(other, "step:forward")
	ok, err := o.TryLock(bg)
	require.NoError(t, err)
	require.True(t, ok, "the step expired the hold: another client gets in")
	require.Greater(t, o.Token(), m.Token())
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second): // ten renewal periods: generous under load
		t.Fatal("the holder was not told")
	}
	require.ErrorIs(t, m.Err(), redisync.ErrLockLost)
	require.NoError(t, o.Unlock(bg))
}
