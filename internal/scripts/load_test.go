package scripts

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync/internal/redistest"
)

// unlearn makes s unknown to this process again, as before its first run.
func unlearn(t *testing.T, s *source) {
	s.sha.Store(nil)
	s.denied.Store(false)
	t.Cleanup(func() { s.sha.Store(nil); s.denied.Store(false) })
}

func lockKeys(name string) *LockKeys {
	return &LockKeys{Lock: "{" + name + "}", Channel: "{" + name + "}:ch", Token: "{" + name + "}:tok"}
}

func calls(t *testing.T, rc rueidis.Client) map[string]int64 {
	info, err := redistest.Do(t, rc, "INFO", "commandstats").ToString()
	require.NoError(t, err)
	return redistest.CommandStats(info)
}

// TestScriptDigestComesFromTheServer: a script's first run is an EVAL with
// one SCRIPT LOAD, whose digest the later runs use as EVALSHA; the client
// computes none.
func TestScriptDigestComesFromTheServer(t *testing.T) {
	unlearn(t, rlockAcquire.src)
	rc := redistest.Start(t).Client(t)
	ctx := context.Background()
	for i, name := range []string{"a", "b", "c"} {
		got, err := LockAcquire(ctx, rc, lockKeys(name), "10000", "o", false)
		require.NoError(t, err)
		require.True(t, got.OK, "run %d", i)
	}
	n := calls(t, rc)
	assert.Equal(t, int64(1), n["script|load"])
	assert.Equal(t, int64(1), n["eval"])
	assert.Equal(t, int64(2), n["evalsha"])
	sha := rlockAcquire.src.digest()
	require.Len(t, sha, 40)
	exists, err := redistest.Do(t, rc, "SCRIPT", "EXISTS", sha).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, exists)
}

// TestScriptDigestSurvivesScriptFlush: after SCRIPT FLUSH the learned digest
// meets NOSCRIPT once and the run goes as EVAL (which loads the script
// again); the next run is an EVALSHA with the same digest.
func TestScriptDigestSurvivesScriptFlush(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	ctx := context.Background()
	_, err := LockAcquire(ctx, rc, lockKeys("a"), "10000", "o", false)
	require.NoError(t, err)
	sha := rlockAcquire.src.digest()
	redistest.Do(t, rc, "SCRIPT", "FLUSH")
	redistest.Do(t, rc, "CONFIG", "RESETSTAT")
	for _, name := range []string{"b", "c"} {
		got, err := LockAcquire(ctx, rc, lockKeys(name), "10000", "o", false)
		require.NoError(t, err)
		require.True(t, got.OK)
	}
	n := calls(t, rc)
	assert.Equal(t, int64(1), n["eval"], "one EVAL after the flush")
	assert.Equal(t, int64(0), n["script|load"])
	assert.Equal(t, sha, rlockAcquire.src.digest())
}

var rejected = regexp.MustCompile(`cmdstat_script\|load:.*rejected_calls=(\d+)`)

// TestRefusedScriptLoadRunsScriptsByEval: a user whose ACL refuses SCRIPT
// LOAD (but allows EVAL and EVALSHA) still runs every script — by EVAL —
// and is asked for SCRIPT LOAD once, not on every call.
func TestRefusedScriptLoadRunsScriptsByEval(t *testing.T) {
	unlearn(t, rlockAcquire.src)
	srv := redistest.Start(t)
	admin := srv.Client(t)
	redistest.Do(t, admin, "ACL", "SETUSER", "noload", "on", ">pw", "~*", "&*", "+@all", "-script")
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Username: "noload", Password: "pw", DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		got, err := LockAcquire(ctx, rc, lockKeys(name), "10000", "o", false)
		require.NoError(t, err)
		require.True(t, got.OK)
	}
	n := calls(t, admin)
	assert.Equal(t, int64(3), n["eval"])
	assert.Zero(t, n["evalsha"])
	info, err := redistest.Do(t, admin, "INFO", "commandstats").ToString()
	require.NoError(t, err)
	m := rejected.FindStringSubmatch(info)
	require.NotNil(t, m, "SCRIPT LOAD was asked for: %s", info)
	got, _ := strconv.Atoi(m[1])
	assert.Equal(t, 1, got, "asked once")
}

// TestRenewBatchAcrossSlotsLearnsTheDigestOnACluster: a renewal batch whose
// commands span hash slots carries the SCRIPT LOAD that learns the digest
// (bound to one key's slot: a keyless command may not join a multi-slot
// batch on a Cluster) and gets a reply for every command.
func TestRenewBatchAcrossSlotsLearnsTheDigestOnACluster(t *testing.T) {
	unlearn(t, LockRenew.src)
	rc := redistest.StartCluster(t, 3).Client(t)
	ctx := context.Background()
	names := []string{"a", "b", "c", "d", "e", "f"}
	var cmds rueidis.Commands
	for _, name := range names {
		k := lockKeys(name)
		got, err := LockAcquire(ctx, rc, k, "10000", "o", false)
		require.NoError(t, err)
		require.True(t, got.OK)
		it := &RenewItem{Key: k.Lock, Owner: "o"}
		cmds = append(cmds, LockRenew.Command(rc, "10000", 1, func(int) *RenewItem { return it }))
	}
	res := LockRenew.DoMulti(ctx, rc, lockKeys(names[0]).Lock, cmds...)
	require.Len(t, res, len(names))
	for i, r := range res {
		alive, err := LockRenew.ParseRenew(r, 1, nil)
		require.NoError(t, err, names[i])
		assert.True(t, alive[0], names[i])
	}
	assert.Len(t, LockRenew.src.digest(), 40)
}

// TestConcurrentFirstRunsMeetScriptFlushes: many goroutines run a script
// for the first time at once while another flushes the script cache again
// and again. Every run succeeds (a NOSCRIPT never reaches a caller: the
// learned digest falls back to EVAL), one SCRIPT LOAD at a time is in
// flight, and the digest learned is the script's.
func TestConcurrentFirstRunsMeetScriptFlushes(t *testing.T) {
	unlearn(t, rlockAcquire.src)
	unlearn(t, rlockRelease.src)
	unlearn(t, LockRenew.src)
	srv := redistest.Start(t)
	rc := srv.Client(t)
	admin := srv.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	var flushes sync.WaitGroup
	flushes.Add(1)
	go func() {
		defer flushes.Done()
		for ctx.Err() == nil {
			admin.Do(ctx, admin.B().ScriptFlush().Build())
			time.Sleep(time.Millisecond)
		}
	}()
	const workers, rounds = 32, 40
	var g errgroup.Group
	for w := range workers {
		g.Go(func() error {
			for i := range rounds {
				k := lockKeys(fmt.Sprintf("w%d:%d", w, i))
				got, err := LockAcquire(ctx, rc, k, "10000", "o", false)
				if err != nil || !got.OK {
					return fmt.Errorf("acquire %s: %v %+v", k.Lock, err, got)
				}
				it := &RenewItem{Key: k.Lock, Owner: "o"}
				cmd := LockRenew.Command(rc, "10000", 1, func(int) *RenewItem { return it })
				res := LockRenew.DoMulti(ctx, rc, k.Lock, cmd)
				if IsNoScript(res[0].Error()) {
					// The batch path's own fallback (the watchdog's): EVAL.
					res = []rueidis.RedisResult{rc.Do(ctx, LockRenew.EvalCommand(rc, "10000", 1, func(int) *RenewItem { return it }))}
				}
				alive, err := LockRenew.ParseRenew(res[0], 1, func(int) *RenewItem { return it })
				if err != nil || !alive[0] {
					return fmt.Errorf("renew %s: %v %v", k.Lock, err, alive)
				}
				rel, err := LockRelease(ctx, rc, k, "o", "10000", 1, "0")
				if err != nil || !rel.Acted || rel.Count != 0 {
					return fmt.Errorf("release %s: %v %+v", k.Lock, err, rel)
				}
			}
			return nil
		})
	}
	err := g.Wait()
	cancel()
	flushes.Wait()
	require.NoError(t, err)
	for _, s := range []*source{rlockAcquire.src, rlockRelease.src, LockRenew.src} {
		require.Len(t, s.digest(), 40)
		assert.False(t, s.loading.Load(), "no SCRIPT LOAD left marked in flight")
		loaded, err := admin.Do(context.Background(), admin.B().ScriptLoad().Script(s.Text()).Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, loaded, s.digest(), "the digest learned is the script's")
	}
	left, err := admin.Do(context.Background(), admin.B().Keys().Pattern("{w*}").Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Empty(t, left, "every lock released")
}
