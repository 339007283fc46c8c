package deploytest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
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

// TestEvictionCheckWithCONFIGRenamedLocksInEveryMode: a server whose
// configuration renames CONFIG away (as managed Redis services do) answers
// the check's CONFIG GET with an unknown-command error; the Client locks as
// usual in every mode, also EvictionRefuse (nothing is known), and reads
// the node only once.
func TestEvictionCheckWithCONFIGRenamedLocksInEveryMode(t *testing.T) {
	srv := redistest.StartArgs(t, "--rename-command", "CONFIG", "")
	rc := srv.Client(t)
	bg := context.Background()
	for _, mode := range []redisync.EvictionCheck{redisync.EvictionWarn, redisync.EvictionRefuse} {
		var logs logBuffer
		c := redisync.New(rc, redisync.WithEvictionCheck(mode), redisync.WithLogger(logs.logger()))
		for i := range 3 {
			m := rlock.New(c, fmt.Sprintf("renamed:%v:%d", mode, i))
			require.NoError(t, m.Lock(bg), "%v", mode)
			require.NoError(t, m.Unlock(bg), "%v", mode)
		}
		require.NoError(t, c.Close())
		assert.Equal(t, 1, strings.Count(logs.String(), "cannot read maxmemory-policy"), "%v: said once\n%s", mode, logs.String())
	}
}

// TestEvictionCheckOnAClusterNamesTheOneNodeThatMayEvict: a Cluster whose
// masters have different policies — one volatile-lru with a limit, the
// others noeviction. EvictionWarn reports that node once (however many
// acquisitions over how many slots) and grants on every node;
// EvictionRefuse refuses every acquisition, naming that node, also those
// whose slot lives on a safe node (documented). Many Clients starting at
// once each read each node once: no more CONFIG GETs than Clients × nodes.
func TestEvictionCheckOnAClusterNamesTheOneNodeThatMayEvict(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	risky := cl.Nodes[1]
	nrc := risky.Client(t)
	redistest.Do(t, nrc, "CONFIG", "SET", "maxmemory-policy", "volatile-lru")
	redistest.Do(t, nrc, "CONFIG", "SET", "maxmemory", "1gb")
	bg := context.Background()

	rc := cl.Client(t)
	rec := &locktest.Recorder{}
	var logs logBuffer
	c := redisync.New(rc, redisync.WithObserver(rec), redisync.WithLogger(logs.logger()))
	for i := range 30 {
		m := rlock.New(c, fmt.Sprintf("cl:warn:%d", i))
		require.NoError(t, m.Lock(bg))
		require.NoError(t, m.Unlock(bg))
	}
	assert.Equal(t, 1, rec.Count(redisync.EventEvictionPolicy, "rlock", nil), "one event")
	assert.Equal(t, 1, strings.Count(logs.String(), "may evict lock keys"), logs.String())
	assert.Contains(t, logs.String(), risky.Addr())
	require.NoError(t, c.Close())

	strict := redisync.New(rc, redisync.WithEvictionCheck(redisync.EvictionRefuse))
	for _, name := range []string{"cl:strict:a", "cl:strict:b", "cl:strict:c", "cl:strict:d"} {
		_, err := rlock.New(strict, name).TryLock(bg)
		var pe *redisync.EvictionPolicyError
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, risky.Addr(), pe.Node, name)
		assert.Equal(t, "volatile-lru", pe.Policy)
	}
	require.NoError(t, strict.Close())

	// Many Clients at once.
	before := int64(0)
	for _, n := range cl.Nodes {
		before += redistest.CommandCalls(t, n.Client(t), "config|get")
	}
	const clients = 12
	var wg sync.WaitGroup
	for k := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redisync.New(rc)
			defer c.Close()
			for i := range 10 {
				m := rlock.New(c, fmt.Sprintf("cl:many:%d:%d", k, i))
				if assert.NoError(t, m.Lock(bg)) {
					assert.NoError(t, m.Unlock(bg))
				}
			}
		}()
	}
	wg.Wait()
	after := int64(0)
	for _, n := range cl.Nodes {
		after += redistest.CommandCalls(t, n.Client(t), "config|get")
	}
	assert.LessOrEqual(t, after-before, int64(clients*len(cl.Nodes)), "CONFIG GETs")
	assert.Positive(t, after-before)
}

// TestEvictionCheckKeepsLockCancellable: the eviction check's first look
// at a node that does not answer (paused) does not outlive the caller's
// ctx: Lock returns ctx.Err() near its deadline, in both modes, instead of
// after the check's own read timeout (2 s a node). Before, the look read
// with a context detached from the caller's.
func TestEvictionCheckKeepsLockCancellable(t *testing.T) {
	for _, mode := range []redisync.EvictionCheck{redisync.EvictionWarn, redisync.EvictionRefuse} {
		srv := redistest.Start(t)
		rc := srv.Client(t)
		c := redisync.New(rc, redisync.WithEvictionCheck(mode))
		srv.Pause()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		err := rlock.New(c, "cancellable").Lock(ctx)
		took := time.Since(start)
		cancel()
		srv.Resume()
		assert.Equal(t, context.DeadlineExceeded, err, "%v: ctx.Err(), unwrapped", mode)
		// The deadline is 200 ms; the check's read timeout is 2 s. 1.5 s
		// leaves a loaded machine 1.3 s of stalls and still tells them apart.
		assert.Less(t, took, 1500*time.Millisecond, "%v: Lock outlived its ctx", mode)
		require.NoError(t, c.Close())
	}
}
