package redisync_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestRenewalAfterScriptFlushReloadsOncePerCommand: 300 holds (two renewal
// scripts per round, MaxRenewBatch is 256) and the server's script cache is
// flushed. The next round meets NOSCRIPT on both commands and sends both
// again as EVAL in one more round trip; no hold is lost, and later rounds
// use EVALSHA again.
//
// The lease is 1.5 s: renewals go every 500 ms and a hold survives a stall
// of about a second. With 600 ms a hold was lost beside a second make test
// (a 400 ms stall of the process, while the test unlocked 300 holds one by
// one after the watch) — not the flush, which the watch had already passed.
func TestRenewalAfterScriptFlushReloadsOncePerCommand(t *testing.T) {
	const lease, n = 1500 * time.Millisecond, 300
	e := locktest.Setup(t, redisync.WithWatchdogTimeout(lease))
	bg := locktest.Bg()
	mus := make([]*rlock.Mutex, n)
	for i := range mus {
		mus[i] = rlock.New(e.C, fmt.Sprintf("renewal:noscript:%d", i))
		require.NoError(t, mus[i].Lock(bg))
	}
	evalsBefore := redistest.CommandCalls(t, e.RC, "eval")
	e.Do(t, "SCRIPT", "FLUSH")
	end := time.Now().Add(2 * lease) // four renewal rounds after the flush
	for time.Now().Before(end) {
		for i, mu := range mus {
			if isDone(mu.Done()) {
				t.Fatalf("hold %d lost (%v) after SCRIPT FLUSH", i, mu.Err())
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	evals := redistest.CommandCalls(t, e.RC, "eval") - evalsBefore
	// One EVAL per command of the first round after the flush (two, or a
	// few more if the holds fell into separate batches), then EVALSHA.
	assert.Positive(t, evals)
	assert.LessOrEqual(t, evals, int64(6), "EVAL calls after one flush")
	for _, mu := range mus {
		require.NoError(t, mu.Unlock(bg))
	}
}
