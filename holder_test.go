package redisync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Holder metadata (issue 14): who took a hold is recorded beside the lock,
// lives and dies with the hold, and shows in every kind's Holders.

func infoKey(name string) string {
	k, _ := keys.Derived(keys.HolderInfoPrefix, name)
	return k
}

// awaitInfo waits for the holder record on name: a hold records who holds
// it with its first renewal (a fixed lease: by the watchdog's timer), a
// third of its lease after the grant.
func awaitInfo(t *testing.T, env *locktest.Env, name string) {
	t.Helper()
	locktest.AwaitAnyRecord(t, env.RC, name, 10*time.Second)
}

// holdKind is one kind of lock, reduced to what these tests need.
type holdKind struct {
	name    string
	lock    func(t *testing.T, c *redisync.Client, name string) (unlock func())
	holders func(t *testing.T, c *redisync.Client, name string) []redisync.Holder
	force   func(t *testing.T, c *redisync.Client, name string)
}

func holdKinds() []holdKind {
	ctx := context.Background()
	return []holdKind{
		{
			name: "rlock",
			lock: func(t *testing.T, c *redisync.Client, name string) func() {
				m := rlock.New(c, name)
				require.NoError(t, m.Lock(ctx))
				return func() { require.NoError(t, m.Unlock(ctx)) }
			},
			holders: func(t *testing.T, c *redisync.Client, name string) []redisync.Holder {
				hs, err := rlock.New(c, name).Holders(ctx)
				require.NoError(t, err)
				return hs
			},
			force: func(t *testing.T, c *redisync.Client, name string) {
				ok, err := rlock.New(c, name).ForceUnlock(ctx)
				require.NoError(t, err)
				require.True(t, ok)
			},
		},
		{
			name: "fairlock",
			lock: func(t *testing.T, c *redisync.Client, name string) func() {
				m := fairlock.New(c, name)
				require.NoError(t, m.Lock(ctx))
				return func() { require.NoError(t, m.Unlock(ctx)) }
			},
			holders: func(t *testing.T, c *redisync.Client, name string) []redisync.Holder {
				hs, err := fairlock.New(c, name).Holders(ctx)
				require.NoError(t, err)
				return hs
			},
			force: func(t *testing.T, c *redisync.Client, name string) {
				ok, err := fairlock.New(c, name).ForceUnlock(ctx)
				require.NoError(t, err)
				require.True(t, ok)
			},
		},
		{
			name: "rwlock read",
			lock: func(t *testing.T, c *redisync.Client, name string) func() {
				m := rwlock.New(c, name)
				require.NoError(t, m.RLock(ctx))
				return func() { require.NoError(t, m.RUnlock(ctx)) }
			},
			holders: rwHolders,
			force:   rwForce,
		},
		{
			name: "rwlock write",
			lock: func(t *testing.T, c *redisync.Client, name string) func() {
				m := rwlock.New(c, name)
				require.NoError(t, m.Lock(ctx))
				return func() { require.NoError(t, m.Unlock(ctx)) }
			},
			holders: rwHolders,
			force:   rwForce,
		},
		{
			name: "semaphore",
			lock: func(t *testing.T, c *redisync.Client, name string) func() {
				p, err := semaphore.New(c, name, 2).Acquire(ctx, 1)
				require.NoError(t, err)
				return func() { require.NoError(t, p.Release(ctx)) }
			},
			holders: func(t *testing.T, c *redisync.Client, name string) []redisync.Holder {
				hs, err := semaphore.New(c, name, 2).Holders(ctx)
				require.NoError(t, err)
				return hs
			},
			force: func(t *testing.T, c *redisync.Client, name string) {
				ok, err := semaphore.New(c, name, 1).ForceUnlock(ctx)
				require.NoError(t, err)
				require.True(t, ok)
			},
		},
		{
			name: "redlock",
			lock: func(t *testing.T, c *redisync.Client, name string) func() {
				m := redlock.New([]*redisync.Client{c}, name)
				require.NoError(t, m.Lock(ctx))
				return func() { require.NoError(t, m.Unlock(ctx)) }
			},
			holders: func(t *testing.T, c *redisync.Client, name string) []redisync.Holder {
				hs, err := redlock.New([]*redisync.Client{c}, name).Holders(ctx)
				require.NoError(t, err)
				return hs
			},
			force: func(t *testing.T, c *redisync.Client, name string) {
				ok, err := redlock.New([]*redisync.Client{c}, name).ForceUnlock(ctx)
				require.NoError(t, err)
				require.True(t, ok)
			},
		},
	}
}

func rwHolders(t *testing.T, c *redisync.Client, name string) []redisync.Holder {
	hs, err := rwlock.New(c, name).Holders(context.Background())
	require.NoError(t, err)
	return hs
}

func rwForce(t *testing.T, c *redisync.Client, name string) {
	ok, err := rwlock.New(c, name).ForceUnlock(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
}

// This process, as a Client records it.
func checkThisProcess(t *testing.T, info *redisync.HolderInfo, label string) {
	t.Helper()
	require.NotNil(t, info, "no holder info")
	host, _ := os.Hostname()
	assert.Equal(t, host, info.Host)
	assert.Equal(t, os.Getpid(), info.PID)
	assert.Equal(t, filepath.Base(os.Args[0]), info.Program)
	assert.Equal(t, label, info.Label)
	assert.WithinDuration(t, time.Now(), info.Started, 10*time.Second)
}

func TestHolderInfoIsWrittenRenewedAndRemovedWithTheHold(t *testing.T) {
	for _, k := range holdKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // each kind on a server of its own
			// A 2 s watchdog lease renewed every 667 ms (room for a loaded
			// machine: Redlock's node timeout is lease/20): after 4.5 s the
			// record must still be there, so renewals extend it.
			env := locktest.Setup(t, redisync.WithLabel("nightly-report"), redisync.WithWatchdogTimeout(2*time.Second))
			name := "holder-" + strings.ReplaceAll(k.name, " ", "-")
			unlock := k.lock(t, env.C, name)
			awaitInfo(t, env, name)

			hs := k.holders(t, env.C, name)
			require.Len(t, hs, 1)
			checkThisProcess(t, hs[0].Info, "nightly-report")
			assert.Equal(t, 1, hs[0].Count)
			assert.Positive(t, hs[0].TTL)
			require.True(t, env.Exists(t, infoKey(name)), "no side key")
			assert.Positive(t, env.PTTL(t, infoKey(name)), "side key without expiry")

			time.Sleep(4500 * time.Millisecond) // more than two leases
			require.True(t, env.Exists(t, infoKey(name)), "the side key expired while the hold was renewed")
			require.True(t, env.Exists(t, name), "the hold itself was lost")
			hs = k.holders(t, env.C, name)
			require.Len(t, hs, 1)
			checkThisProcess(t, hs[0].Info, "nightly-report")

			unlock()
			assert.False(t, env.Exists(t, infoKey(name)), "the side key outlived the hold")
			// (The semaphore's configuration and the redlock's fencing
			// counter stay by design.)
			if k.name == "rlock" || k.name == "fairlock" {
				env.WaitEmpty(t)
			}
		})
	}
}

func TestForceUnlockRemovesHolderInfo(t *testing.T) {
	for _, k := range holdKinds() {
		t.Run(k.name, func(t *testing.T) {
			env := locktest.Setup(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
			name := "force-" + strings.ReplaceAll(k.name, " ", "-")
			k.lock(t, env.C, name)
			awaitInfo(t, env, name)
			k.force(t, env.C, name)
			assert.False(t, env.Exists(t, infoKey(name)), "force-unlock left the holder info")
			assert.Empty(t, k.holders(t, env.C, name))
		})
	}
}

func TestCrashedHolderLeavesNoHolderInfoAfterItsLease(t *testing.T) {
	for _, k := range holdKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // each its own name; the sleeps overlap
			env := locktest.Setup(t)
			crashed := env.Client(t, redisync.WithWatchdogTimeout(300*time.Millisecond))
			name := "crash-" + k.name
			k.lock(t, crashed, name)
			awaitInfo(t, env, name)
			crashed.Close() // renewals stop, nothing is released: a crash
			locktest.Eventually(t, 5*time.Second, func() bool { return !env.Exists(t, infoKey(name)) },
				"the holder info outlived the crashed hold's lease")
			assert.Empty(t, k.holders(t, env.C, name))
		})
	}
}

func TestRedissonHoldShowsWithoutHolderInfo(t *testing.T) {
	env := locktest.Setup(t)
	// Redisson's RLock: field "<uuid>:<thread>" = count, PEXPIRE = lease.
	env.Do(t, "HSET", "redisson-held", "8f0c6d43-4b8c-4a11-9a4e-3d1f1f6f3a10:1", "2")
	env.Do(t, "PEXPIRE", "redisson-held", "30000")
	hs, err := rlock.New(env.C, "redisson-held").Holders(locktest.Bg())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, "8f0c6d43-4b8c-4a11-9a4e-3d1f1f6f3a10:1", hs[0].Owner)
	assert.Equal(t, 2, hs[0].Count)
	assert.Nil(t, hs[0].Info)
	// The lock hash itself holds nothing of ours.
	fields, err := env.Do(t, "HKEYS", "redisson-held").AsStrSlice()
	require.NoError(t, err)
	assert.Equal(t, []string{"8f0c6d43-4b8c-4a11-9a4e-3d1f1f6f3a10:1"}, fields)
}

func TestOurHoldLeavesRedissonsLayoutAlone(t *testing.T) {
	env := locktest.Setup(t)
	m := rlock.New(env.C, "layout")
	require.NoError(t, m.Lock(locktest.Bg()))
	defer func() { require.NoError(t, m.Unlock(locktest.Bg())) }()
	fields, err := env.Do(t, "HKEYS", "layout").AsStrSlice()
	require.NoError(t, err)
	for _, f := range fields {
		assert.True(t, f == m.Owner() || strings.HasPrefix(f, "redisync:"), "field %q in the lock hash", f)
	}
}

// Whatever another client writes under the side key — a string, a hash
// without expiry — never costs a hold: the acquire takes the lock and
// records nothing, renewals keep the hold (and leave the key alone), the
// release frees the lock, and the foreign key is never changed. (It was
// refused with ErrWrongKind: one SET of the side key locked a name out
// for good.)
func TestForeignDataUnderTheHolderInfoKeyCostsNoHold(t *testing.T) {
	for _, k := range holdKinds() {
		for _, plant := range [][]string{
			{"SET", "", "mine"},
			{"HSET", "", "f", "user data without expiry"},
		} {
			t.Run(k.name+"/"+plant[0], func(t *testing.T) {
				t.Parallel() // each its own name; the sleeps overlap
				env := locktest.Setup(t, redisync.WithWatchdogTimeout(time.Second))
				name := "foreign-" + strings.ReplaceAll(k.name, " ", "-")
				cmd := append([]string{}, plant...)
				cmd[1] = infoKey(name)
				env.Do(t, cmd...)
				before := sideKey(t, env, name)

				unlock := k.lock(t, env.C, name)
				hs := k.holders(t, env.C, name)
				require.Len(t, hs, 1)
				assert.Nil(t, hs[0].Info)
				time.Sleep(1500 * time.Millisecond) // renewals every 333 ms, beyond the 1 s lease
				require.Len(t, k.holders(t, env.C, name), 1, "the hold was lost")
				unlock()
				assert.Empty(t, k.holders(t, env.C, name))
				assert.Equal(t, before, sideKey(t, env, name), "the foreign side key was changed")
			})
		}
	}
}

// Another client overwrites the side key while the lock is held: renewals
// keep the hold, the release frees the lock, and the foreign key stays as
// it was written.
func TestSideKeyOverwrittenDuringAHoldCostsNoHold(t *testing.T) {
	for _, k := range holdKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // each its own name; the sleeps overlap
			env := locktest.Setup(t, redisync.WithWatchdogTimeout(time.Second))
			name := "overwritten-" + strings.ReplaceAll(k.name, " ", "-")
			unlock := k.lock(t, env.C, name)
			awaitInfo(t, env, name)
			env.Do(t, "SET", infoKey(name), "someone else's")
			time.Sleep(1500 * time.Millisecond)
			hs := k.holders(t, env.C, name)
			require.Len(t, hs, 1, "the hold was lost")
			assert.Nil(t, hs[0].Info)
			unlock()
			assert.Empty(t, k.holders(t, env.C, name))
			v, err := env.Do(t, "GET", infoKey(name)).ToString()
			require.NoError(t, err)
			assert.Equal(t, "someone else's", v)
			assert.Equal(t, int64(-1), env.PTTL(t, infoKey(name)), "an expiry was put on someone else's key")
			// And the name can be locked again.
			k.lock(t, env.C, name)()
		})
	}
}

// sideKey is the holder-info key of name as it stands: type, contents and
// whether it expires.
func sideKey(t *testing.T, env *locktest.Env, name string) string {
	t.Helper()
	dump, err := env.Do(t, "DUMP", infoKey(name)).ToString()
	require.NoError(t, err)
	return fmt.Sprintf("%q expires=%v", dump, env.PTTL(t, infoKey(name)) != -1)
}

// A fixed hold's record lives one lease from its write (a third of the
// lease after the grant), so it goes soon after the hold; the next holder
// shows its own.
func TestExpiredHoldersRecordIsNotShownAndExpires(t *testing.T) {
	env := locktest.Setup(t)
	ctx := locktest.Bg()
	first := env.Client(t, redisync.WithLabel("first"))
	m := rlock.New(first, "expiring", rlock.WithLease(300*time.Millisecond))
	require.NoError(t, m.Lock(ctx))
	awaitInfo(t, env, "expiring")
	locktest.Eventually(t, 5*time.Second, func() bool { return !env.Exists(t, infoKey("expiring")) },
		"the fixed hold's record outlived it") // no release
	second := env.Client(t, redisync.WithLabel("second"), redisync.WithWatchdogTimeout(900*time.Millisecond))
	n := rlock.New(second, "expiring")
	require.NoError(t, n.Lock(ctx))
	defer func() { require.NoError(t, n.Unlock(ctx)) }()
	locktest.AwaitRecord(t, env.RC, "expiring", n.Owner(), 10*time.Second)
	hs, err := n.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	require.NotNil(t, hs[0].Info)
	assert.Equal(t, "second", hs[0].Info.Label)
	assert.Equal(t, int64(1), env.Int(t, "HLEN", infoKey("expiring")), "the former holder's record is still there")
}

func TestSemaphoreForgetsExpiredPermitsRecords(t *testing.T) {
	env := locktest.Setup(t)
	ctx := locktest.Bg()
	s := semaphore.New(env.C, "sem-expiring", 2, semaphore.WithLease(300*time.Millisecond))
	_, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	awaitInfo(t, env, "sem-expiring")
	locktest.Eventually(t, 5*time.Second, func() bool { return !env.Exists(t, infoKey("sem-expiring")) },
		"the expired permit's record outlived it")
	short := env.Client(t, redisync.WithWatchdogTimeout(900*time.Millisecond))
	p, err := semaphore.New(short, "sem-expiring", 2).Acquire(ctx, 1)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Release(ctx)) }()
	locktest.AwaitRecord(t, env.RC, "sem-expiring", p.ID(), 10*time.Second)
	hs, err := s.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, p.ID(), hs[0].Owner)
	assert.NotNil(t, hs[0].Info)
	assert.Equal(t, int64(1), env.Int(t, "HLEN", infoKey("sem-expiring")))
}

func TestSharedOwnerKeepsTheFirstHoldersRecord(t *testing.T) {
	env := locktest.Setup(t)
	ctx := locktest.Bg()
	short := redisync.WithWatchdogTimeout(900 * time.Millisecond)
	a := rlock.New(env.Client(t, redisync.WithLabel("one"), short), "shared", rlock.WithOwner("job-7"))
	b := rlock.New(env.Client(t, redisync.WithLabel("two"), short), "shared", rlock.WithOwner("job-7"))
	require.NoError(t, a.Lock(ctx))
	awaitInfo(t, env, "shared")
	require.NoError(t, b.Lock(ctx))
	// b's first renewals (every 300 ms) find a's record and keep it.
	time.Sleep(700 * time.Millisecond)
	hs, err := a.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, 2, hs[0].Count)
	require.NotNil(t, hs[0].Info)
	assert.Equal(t, "one", hs[0].Info.Label, "one owner field, one record: the first hold's")
	require.NoError(t, a.Unlock(ctx))
	assert.True(t, env.Exists(t, infoKey("shared")), "the record went while the owner still holds")
	require.NoError(t, b.Unlock(ctx))
	// (A release that saw no record of its own hold leaves the record to
	// its expiry.)
	locktest.Eventually(t, 10*time.Second, func() bool { return !env.Exists(t, infoKey("shared")) }, "the record outlived the holds")
}

func TestWithHolderInfoFalseRecordsNothing(t *testing.T) {
	env := locktest.Setup(t, redisync.WithHolderInfo(false))
	ctx := locktest.Bg()
	m := rlock.New(env.C, "quiet")
	require.NoError(t, m.Lock(ctx))
	defer func() { require.NoError(t, m.Unlock(ctx)) }()
	assert.False(t, env.Exists(t, infoKey("quiet")))
	hs, err := m.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Nil(t, hs[0].Info)
}

func TestLabelLimits(t *testing.T) {
	require.NoError(t, redisync.CheckLabel(strings.Repeat("x", redisync.MaxLabelLength)))
	err := redisync.CheckLabel(strings.Repeat("x", redisync.MaxLabelLength+1))
	require.ErrorIs(t, err, redisync.ErrBadLabel)
	assert.Contains(t, err.Error(), "129 bytes")
	require.ErrorIs(t, redisync.CheckLabel("\xff"), redisync.ErrBadLabel)
	env := locktest.Setup(t)
	assert.PanicsWithValue(t, "redisync: WithLabel: "+err.Error(), func() {
		redisync.New(env.RC, redisync.WithLabel(strings.Repeat("x", redisync.MaxLabelLength+1)))
	})
}

// Redis refuses a script whose KEYS the user may not touch: a user whose
// ACL does not cover the holder-info key cannot lock while its Client
// records metadata, and can with WithHolderInfo(false), whose scripts are
// given no such key.
func TestWithHolderInfoFalseNeedsNoACLForTheSideKey(t *testing.T) {
	env := locktest.Setup(t)
	env.Do(t, "ACL", "SETUSER", "locker", "reset", "on", ">pw", "~acl:*", "~redisync_lock_token:*", "~redisson_lock__channel:*", "&*", "+@all")
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{env.Srv.Addr()}, Username: "locker", Password: "pw",
		DisableCache: true})
	require.NoError(t, err)
	defer rc.Close()
	ctx := locktest.Bg()
	// A recording Client locks and unlocks too: acquires and releases of
	// holds without a record are given no side key, and the record its
	// renewals would write is refused (and not tried again at once).
	recording := redisync.New(rc, redisync.WithWatchdogTimeout(900*time.Millisecond))
	defer recording.Close()
	r := rlock.New(recording, "acl:job")
	ok, err := r.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	time.Sleep(700 * time.Millisecond) // past its first renewal
	assert.False(t, env.Exists(t, infoKey("acl:job")))
	require.NoError(t, r.Err(), "the refused record cost the hold")
	require.NoError(t, r.Unlock(ctx))
	assert.False(t, env.Exists(t, "acl:job"))

	c := redisync.New(rc, redisync.WithHolderInfo(false))
	defer c.Close()
	m := rlock.New(c, "acl:job")
	require.NoError(t, m.Lock(ctx))
	assert.False(t, env.Exists(t, infoKey("acl:job")))
	hs, err := m.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Nil(t, hs[0].Info)
	require.NoError(t, m.Unlock(ctx))
	assert.False(t, env.Exists(t, "acl:job"))
}

// inspector is the inspection surface every lock handle offers, the
// method set multilock asks of its components.
type inspector interface {
	IsLocked(ctx context.Context) (bool, error)
	HoldCount(ctx context.Context) (int, error)
	TTL(ctx context.Context) (time.Duration, error)
	ForceUnlock(ctx context.Context) (bool, error)
}

// Every lock handle offers the one inspection surface.
var (
	_ inspector = (*rlock.Mutex)(nil)
	_ inspector = (*fairlock.Mutex)(nil)
	_ inspector = (*rwlock.RWMutex)(nil)
	_ inspector = (*redlock.Mutex)(nil)
	_ inspector = (*semaphore.Semaphore)(nil)
	_ inspector = (*multilock.Mutex)(nil)
)

// A multilock over rlocks in one slot takes them in one script
// (rlock_acquire_all.lua); each component's first renewal records its holder, and the
// multilock's inspection covers every component.
func TestMultilockRecordsAndInspectsEveryComponent(t *testing.T) {
	env := locktest.Setup(t, redisync.WithLabel("batch"), redisync.WithWatchdogTimeout(900*time.Millisecond))
	ctx := locktest.Bg()
	a, b := rlock.New(env.C, "{acct}:a"), rlock.New(env.C, "{acct}:b")
	ml := multilock.New(a, b)
	require.NoError(t, ml.Lock(ctx))
	for _, name := range []string{"{acct}:a", "{acct}:b"} {
		awaitInfo(t, env, name)
	}
	locked, err := ml.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	n, err := ml.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	hs, err := ml.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	for _, part := range hs {
		require.Len(t, part, 1)
		require.NotNil(t, part[0].Info)
		assert.Equal(t, "batch", part[0].Info.Label)
	}
	require.NoError(t, ml.Unlock(ctx))
	for _, name := range []string{"{acct}:a", "{acct}:b"} {
		assert.False(t, env.Exists(t, infoKey(name)), name)
	}
	require.NoError(t, ml.Lock(ctx))
	ok, err := ml.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	env.WaitEmpty(t)
}

// A read-write lock's holders: one per owner and mode.
func TestRWLockHolders(t *testing.T) {
	env := locktest.Setup(t)
	ctx := locktest.Bg()
	r1, r2 := rwlock.New(env.C, "rw-holders"), rwlock.New(env.C, "rw-holders")
	require.NoError(t, r1.RLock(ctx))
	require.NoError(t, r2.RLock(ctx))
	hs, err := r1.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	owners := map[string]string{}
	for _, h := range hs {
		owners[h.Owner] = h.Mode
		assert.Equal(t, 1, h.Count)
		assert.Positive(t, h.TTL)
	}
	assert.Equal(t, map[string]string{r1.Owner(): "read", r2.Owner(): "read"}, owners)
	n, err := r1.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, r1.RUnlock(ctx))
	require.NoError(t, r2.RUnlock(ctx))
	w := rwlock.New(env.C, "rw-holders")
	require.NoError(t, w.Lock(ctx))
	hs, err = w.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, redisync.Holder{Owner: w.Owner(), Mode: "write", Count: 1, TTL: hs[0].TTL, Info: hs[0].Info}, hs[0])
	ok, err := w.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
}

// A read-write lock records each reader (field "<owner>") and the writer
// (field "<owner>:write") on their own: a reader's record goes with its
// last read hold, the writer's with the write hold (a downgrade keeps the
// read record), every one with the lock; a Client that records nothing
// reads beside recording ones without a record.
func TestRWLockRecordsEachReaderAndTheWriter(t *testing.T) {
	env := locktest.Setup(t)
	ctx := locktest.Bg()
	side := infoKey("rw-records")
	labels := func(rw *rwlock.RWMutex) map[string]string {
		t.Helper()
		hs, err := rw.Holders(ctx)
		require.NoError(t, err)
		out := map[string]string{}
		for _, h := range hs {
			label := "<none>"
			if h.Info != nil {
				label = h.Info.Label
			}
			out[h.Mode+" "+h.Owner] = label
		}
		return out
	}
	short := redisync.WithWatchdogTimeout(900 * time.Millisecond)
	r1 := rwlock.New(env.Client(t, redisync.WithLabel("reader one"), short), "rw-records")
	r2 := rwlock.New(env.Client(t, redisync.WithLabel("reader two"), short), "rw-records")
	quiet := rwlock.New(env.Client(t, redisync.WithHolderInfo(false), short), "rw-records")
	require.NoError(t, r1.RLock(ctx))
	require.NoError(t, r2.RLock(ctx))
	require.NoError(t, r2.RLock(ctx)) // re-entry keeps the record
	require.NoError(t, quiet.RLock(ctx))
	locktest.AwaitRecord(t, env.RC, "rw-records", r1.Owner(), 10*time.Second)
	locktest.AwaitRecord(t, env.RC, "rw-records", r2.Owner(), 10*time.Second)
	assert.Equal(t, map[string]string{"read " + r1.Owner(): "reader one", "read " + r2.Owner(): "reader two",
		"read " + quiet.Owner(): "<none>"}, labels(r1))
	require.NoError(t, r1.RUnlock(ctx))
	assert.Equal(t, int64(1), env.Int(t, "HLEN", side), "the released reader's record stayed")
	require.NoError(t, r2.RUnlock(ctx))
	assert.True(t, env.Exists(t, side), "a record went with a read hold the owner still has")
	require.NoError(t, r2.RUnlock(ctx))
	assert.False(t, env.Exists(t, side), "the last recorded reader's record stayed")
	require.NoError(t, quiet.RUnlock(ctx))

	w := rwlock.New(env.Client(t, redisync.WithLabel("writer"), short), "rw-records", rwlock.WithReentrant())
	require.NoError(t, w.Lock(ctx))
	require.NoError(t, w.RLock(ctx)) // a writer may read
	locktest.AwaitRecord(t, env.RC, "rw-records", w.Owner()+":write", 10*time.Second)
	locktest.AwaitRecord(t, env.RC, "rw-records", w.Owner(), 10*time.Second)
	assert.Equal(t, map[string]string{"write " + w.Owner(): "writer", "read " + w.Owner(): "writer"}, labels(w))
	require.NoError(t, w.Unlock(ctx)) // downgrade: the read hold stays
	assert.Equal(t, map[string]string{"read " + w.Owner(): "writer"}, labels(w))
	assert.Equal(t, int64(0), env.Int(t, "HEXISTS", side, w.Owner()+":write"))
	require.NoError(t, w.RUnlock(ctx))
	assert.False(t, env.Exists(t, side))
	assert.False(t, env.Exists(t, "rw-records"))
}

// On a Cluster the side key lives in the name's slot (the scripts would
// fail CROSSSLOT otherwise): every kind records, renews and removes it for
// plain names, names with a hash tag and with stray braces. (A name whose
// keys cannot share a slot, "x{}y", is ErrInvalidName on a Cluster, by
// design.)
func TestHolderInfoOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)
	c := redisync.New(rc, redisync.WithLabel("on a cluster"), redisync.WithWatchdogTimeout(time.Second))
	t.Cleanup(func() { c.Close() })
	exists := func(key string) bool {
		n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
		require.NoError(t, err)
		return n == 1
	}
	for _, k := range holdKinds() {
		for _, name := range []string{"plain", "{tag}:x", "a}b{c}"} {
			t.Run(k.name+"/"+name, func(t *testing.T) {
				t.Parallel() // each its own name; the sleeps overlap
				name := k.name + ":" + name
				if k.name == "redlock" || k.name == "semaphore" {
					name = strings.ReplaceAll(name, " ", "-")
				}
				unlock := k.lock(t, c, name)
				time.Sleep(1500 * time.Millisecond) // renewals every 333 ms, beyond the 1 s lease
				hs := k.holders(t, c, name)
				require.Len(t, hs, 1)
				require.NotNil(t, hs[0].Info)
				assert.Equal(t, "on a cluster", hs[0].Info.Label)
				require.True(t, exists(infoKey(name)))
				unlock()
				assert.False(t, exists(infoKey(name)), "the side key outlived the hold")
			})
		}
	}
}

// Clients that record and clients that do not (WithHolderInfo(false)) share
// a name: each hold shows its own record or none, never another's, and the
// records go with their holds.
func TestRecordingAndQuietClientsShareAName(t *testing.T) {
	env := locktest.Setup(t)
	ctx := locktest.Bg()
	loud := env.Client(t, redisync.WithLabel("loud"), redisync.WithWatchdogTimeout(900*time.Millisecond))
	quiet := env.Client(t, redisync.WithHolderInfo(false))

	s := semaphore.New(loud, "mixed-sem", 3)
	p1, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	p2, err := semaphore.New(quiet, "mixed-sem", 3).Acquire(ctx, 2)
	require.NoError(t, err)
	locktest.AwaitRecord(t, env.RC, "mixed-sem", p1.ID(), 10*time.Second)
	hs, err := s.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	for _, h := range hs {
		if h.Owner == p1.ID() {
			require.NotNil(t, h.Info)
			assert.Equal(t, "loud", h.Info.Label)
		} else {
			assert.Equal(t, p2.ID(), h.Owner)
			assert.Nil(t, h.Info, "the quiet permit shows another's record")
		}
	}
	require.NoError(t, p1.Release(ctx))
	assert.False(t, env.Exists(t, infoKey("mixed-sem")))
	require.NoError(t, p2.Release(ctx))

	// A recording holder's lease runs out; a quiet one takes the lock:
	// the old record is not shown as the new holder's.
	m := rlock.New(loud, "mixed-lock", rlock.WithLease(200*time.Millisecond))
	require.NoError(t, m.Lock(ctx))
	locktest.Eventually(t, 5*time.Second, func() bool { return !env.Exists(t, "mixed-lock") }, "the lease ran out")
	q := rlock.New(quiet, "mixed-lock")
	require.NoError(t, q.Lock(ctx))
	hs2, err := q.Holders(ctx)
	require.NoError(t, err)
	require.Len(t, hs2, 1)
	assert.Equal(t, q.Owner(), hs2[0].Owner)
	assert.Nil(t, hs2[0].Info)
	require.NoError(t, q.Unlock(ctx))
}

// A user whose ACL covers every key of the locks but the holder-info keys
// locks with WithHolderInfo(false), and still reads holders and
// force-unlocks every kind: those calls give the side key to their scripts
// (to delete or read other Clients' records) and, refused for it, go again
// without it. (ForceUnlock of every kind, and a semaphore's Holders, failed
// with NOPERM.)
func TestForceUnlockAndHoldersNeedNoACLForTheSideKey(t *testing.T) {
	env := locktest.Setup(t)
	env.Do(t, "ACL", "SETUSER", "locker", "reset", "on", ">pw", "~acl:*", "~{acl:*", "~redisync_lock_*",
		"~redisync_fair_*", "~redisync_sem_*", "~redisync_rwlock_*", "~redisync_redlock_*", "~redisson*", "&*", "+@all")
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{env.Srv.Addr()}, Username: "locker", Password: "pw",
		DisableCache: true})
	require.NoError(t, err)
	defer rc.Close()
	c := redisync.New(rc, redisync.WithHolderInfo(false))
	defer c.Close()
	for _, k := range holdKinds() {
		t.Run(k.name, func(t *testing.T) {
			name := "acl:" + strings.ReplaceAll(k.name, " ", "-")
			k.lock(t, c, name)
			hs := k.holders(t, c, name)
			require.Len(t, hs, 1)
			assert.Nil(t, hs[0].Info)
			k.force(t, c, name)
			assert.Empty(t, k.holders(t, c, name))
		})
	}
}
