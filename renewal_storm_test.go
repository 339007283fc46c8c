package redisync_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/watchdog"
	"github.com/redisync/redisync/rlock"
)

// TestRenewalStormIsPacedWhileTheServerIsDown (issue 12, defect 7): 1,000
// holds, and the server dies. Before the fix a failed renewal was due again
// inside the batching window, so the watchdog re-fired at once: thousands of
// renewal rounds (dials) per second until the deadlines. Now each round
// that fails waits RetryInterval (TTL/10, at most 1 s) plus jitter, and the
// retries of every batch converge on one round: at most 2 rounds per second
// to the one node, on average, over the first 5 s and over the whole outage.
// The holds are reported lost at their deadlines — not before (no answer
// is not "gone") and not much after.
func TestRenewalStormIsPacedWhileTheServerIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a lease of 8 s")
	}
	// 8 s: RetryInterval is 800 ms, so even the paced retries of one lease
	// stay under 2 per second; the point is that they do not multiply.
	const lease, n = 8 * time.Second, 1000
	// Parallel: its own server; the rate bound is an upper bound (a busy
	// machine only slows the retries) and the loss bound has lease/16
	// (500 ms) of slack for waking a thousand watchers.
	t.Parallel()
	counter := newRenewalCounter()
	e := locktest.Setup(t, redisync.WithWatchdogTimeout(lease), redisync.WithObserver(counter))
	bg := locktest.Bg()

	mus := make([]*rlock.Mutex, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				mus[i] = rlock.New(e.C, fmt.Sprintf("renewal:storm:%d", i))
				if err := mus[i].Lock(bg); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	_, failedBefore := counter.counts("lock")
	killed := time.Now()
	e.Srv.Kill()

	// One watcher per hold records when its loss was reported.
	lostAt := make([]time.Time, n)
	giveUp := time.After(time.Until(killed.Add(lease + 5*time.Second)))
	stop := make(chan struct{})
	var watchers sync.WaitGroup
	for i, mu := range mus {
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			select {
			case <-mu.Done():
				lostAt[i] = time.Now()
			case <-stop:
			}
		}()
	}
	allLost := make(chan struct{})
	go func() { watchers.Wait(); close(allLost) }()
	select {
	case <-allLost:
	case <-giveUp:
		close(stop)
		<-allLost
		t.Fatalf("holds not reported lost %v after the server died", time.Since(killed))
	}
	for _, mu := range mus {
		assert.ErrorIs(t, mu.Err(), redisync.ErrLockLost)
	}
	outage := time.Since(killed)
	_, failed := counter.counts("lock")
	rounds := failed - failedBefore

	first, last := lostAt[0], lostAt[0]
	for _, at := range lostAt {
		if at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	// Every hold was confirmed at most TTL/3 (plus the batching window)
	// before the kill, so its deadline is at least TTL/2 after it.
	assert.GreaterOrEqual(t, first.Sub(killed), lease/2, "a hold was reported lost before its deadline")
	// Every deadline is before killed + lease; the slack is for a loaded
	// machine waking a thousand watchers.
	assert.LessOrEqual(t, last.Sub(killed), lease+lease/16, "a hold was reported lost well after its lease")

	perSecond := float64(rounds) / outage.Seconds()
	inFirst5s := counter.failedBetween("lock", killed, killed.Add(5*time.Second))
	t.Logf("%d renewal rounds in %v (%.2f/s), %d in the first 5 s, for %d holds; retry interval %v",
		rounds, outage.Round(time.Millisecond), perSecond, inFirst5s, n, watchdog.RetryInterval(lease))
	assert.LessOrEqual(t, perSecond, 2.0, "renewal rounds per second to the dead node")
	assert.LessOrEqual(t, inFirst5s, 10, "renewal rounds to the dead node in the first 5 s")
	assert.Positive(t, rounds, "renewals were attempted while the server was down")
}
