package redisync_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestEvictionRefuseHoldsBackAcquisitionsUntilTheFirstLookEnds: with
// EvictionRefuse, the acquisitions that arrive while the Client's first
// look at the nodes is still under way wait for its verdict instead of
// going on unchecked. The server is paused while they start, so the first
// look's CONFIG GET is in flight when the others arrive (before the fix
// they skipped the check — the look was someone else's — and were granted
// past allkeys-lru once the server resumed).
func TestEvictionRefuseHoldsBackAcquisitionsUntilTheFirstLookEnds(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	redistest.Do(t, rc, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	redistest.Do(t, rc, "CONFIG", "SET", "maxmemory", "1gb")
	c := redisync.New(rc, redisync.WithEvictionCheck(redisync.EvictionRefuse))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const n = 8
	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = rlock.New(c, fmt.Sprintf("strict:race:%d", i)).TryLock(ctx)
		}()
	}
	// Long enough for every goroutine to have reached the check on a
	// loaded machine; too short only makes the test pass without teeth.
	time.Sleep(300 * time.Millisecond)
	srv.Resume()
	resumed = true
	wg.Wait()
	for i, err := range errs {
		assert.ErrorIs(t, err, redisync.ErrEvictionPolicy, "acquisition %d", i)
	}
	n0, err := redistest.Do(t, rc, "DBSIZE").AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n0, "nothing granted")
}
