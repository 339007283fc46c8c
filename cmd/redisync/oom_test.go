package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redlock"
)

// TestInspectShowsHolderRecordsUnderOOM: under maxmemory with noeviction,
// when an operator most needs it, inspect shows who holds a lock — a run's
// hold (a lock hash) and a Redlock's key (a string) with their holder
// records, and no note. (It read the records in one MULTI, and Redis
// refuses every command queued in a MULTI then: "holder records not shown:
// ... EXECABORT Transaction discarded because of previous errors".)
func TestInspectShowsHolderRecordsUnderOOM(t *testing.T) {
	e := locktest.Setup(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
	startRun(t, e, "oom:nightly", "--label", "nightly under oom")
	rl := redlock.New([]*redisync.Client{e.C}, "oom:redlock")
	require.NoError(t, rl.Lock(locktest.Bg()))
	awaitRecords(t, e, "oom:redlock", 1) // the records come before the memory runs out
	redistest.ExhaustMemory(t, e.RC)

	labels := map[string]string{"oom:nightly": "nightly under oom", "oom:redlock": ""}
	for name, label := range labels {
		r := cli(t, e, "", "inspect", "--json", name)
		require.Equal(t, 0, r.code, "%s: %s", name, r.stderr)
		var got inspection
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
		assert.Empty(t, got.Note, name)
		require.Len(t, got.Holders, 1, name)
		require.NotNil(t, got.Holders[0].Info, "%s: the holder's record", name)
		assert.NotEmpty(t, got.Holders[0].Info.Host, name)
		assert.Equal(t, label, got.Holders[0].Info.Label, name)
	}
	require.NoError(t, rl.Unlock(locktest.Bg()), "a release runs under OOM")
}
