package keyspace

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// aclLease is a fixed lease, so no renewal changes an expiry between two
// snapshots.
const aclLease = time.Minute

// step is one operation of a primitive's life, run by a user that may be
// denied a command.
type step struct {
	label string
	run   func(ctx context.Context) error
}

// aclFlow is a primitive's whole life on Client c (admin is a Client with
// every permission, for the other party of a contended step), and the write
// commands its scripts use.
type aclFlow struct {
	primitive string
	writes    []string
	steps     func(c, admin *redisync.Client) []step
}

var aclFlows = []aclFlow{
	{"rlock", []string{"hset", "hincrby", "pexpire", "del", "set"}, func(c, _ *redisync.Client) []step {
		m := rlock.New(c, "acl:rlock", rlock.WithLease(aclLease), rlock.WithReentrant())
		return []step{
			{"lock", m.Lock}, {"re-enter", m.Lock}, {"unlock inner", m.Unlock}, {"unlock", m.Unlock},
			{"lock again", m.Lock},
			{"force-unlock", func(ctx context.Context) error { _, err := rlock.New(c, "acl:rlock").ForceUnlock(ctx); return err }},
		}
	}},
	{"fairlock", []string{"hset", "hincrby", "pexpire", "del", "set", "zadd", "zrem", "zremrangebyscore"}, func(c, admin *redisync.Client) []step {
		other := fairlock.New(admin, "acl:fair", fairlock.WithLease(aclLease))
		m := fairlock.New(c, "acl:fair", fairlock.WithLease(aclLease), fairlock.WithReentrant())
		return []step{
			{"lock", m.Lock}, {"re-enter", m.Lock}, {"unlock inner", m.Unlock}, {"unlock", m.Unlock},
			{"other holds", other.Lock},
			{"queue and give up", func(ctx context.Context) error {
				ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				if err := m.Lock(ctx); err != context.DeadlineExceeded {
					return err
				}
				return nil
			}},
			{"other releases", other.Unlock}, {"lock again", m.Lock},
			{"force-unlock", func(ctx context.Context) error { _, err := fairlock.New(c, "acl:fair").ForceUnlock(ctx); return err }},
		}
	}},
	{"rwlock", []string{"hset", "hincrby", "hdel", "pexpire", "del", "set", "zadd", "zrem", "zremrangebyscore"}, func(c, admin *redisync.Client) []step {
		other := rwlock.New(admin, "acl:rw", rwlock.WithLease(aclLease))
		rw := rwlock.New(c, "acl:rw", rwlock.WithLease(aclLease), rwlock.WithWriterPreference())
		return []step{
			{"read lock", rw.RLock}, {"read unlock", rw.RUnlock},
			{"write lock", rw.Lock}, {"write unlock", rw.Unlock},
			{"other reads", other.RLock},
			// The rare paths: a read hold beside another's (the writers'
			// queue purged, one field of two removed).
			{"read beside it", rw.RLock}, {"read unlock beside it", rw.RUnlock},
			{"write waits and gives up", func(ctx context.Context) error {
				ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				if err := rw.Lock(ctx); err != context.DeadlineExceeded {
					return err
				}
				return nil
			}},
			{"other read unlock", other.RUnlock},
			{"read lock again", rw.RLock},
			{"force-unlock", func(ctx context.Context) error { _, err := rwlock.New(c, "acl:rw").ForceUnlock(ctx); return err }},
		}
	}},
	{"semaphore", []string{"hsetnx", "hset", "hdel", "hincrby", "del", "zadd", "zrem", "zremrangebyscore", "pexpire"}, func(c, _ *redisync.Client) []step {
		s := semaphore.New(c, "acl:sem", 2, semaphore.WithLease(aclLease))
		var p *semaphore.Permit
		return []step{
			{"acquire", func(ctx context.Context) (err error) { p, err = s.Acquire(ctx, 1); return err }},
			{"capacity", func(ctx context.Context) error { _, err := s.Capacity(ctx); return err }},
			{"release", func(ctx context.Context) error { return p.Release(ctx) }},
			{"set permits", func(ctx context.Context) error { return s.SetPermits(ctx, 3) }},
			{"acquire again", func(ctx context.Context) (err error) { p, err = s.Acquire(ctx, 1); return err }},
			{"force-release", func(ctx context.Context) error { _, err := semaphore.New(c, "acl:sem", 1).ForceUnlock(ctx); return err }},
		}
	}},
	{"redlock", []string{"set", "pexpire", "del"}, func(c, _ *redisync.Client) []step {
		m := redlock.New([]*redisync.Client{c}, "acl:redlock", redlock.WithLease(aclLease))
		return []step{{"lock", m.Lock}, {"unlock", m.Unlock}}
	}},
}

// TestDeniedCommandLeavesNothingBehind is issue 13's ACL matrix: for every
// write command a primitive's scripts use, a user denied only that command
// gets a NOPERM error naming it, and the step that failed changed nothing
// in Redis (every key's value and expiry as before). Steps before it ran
// as usual; the flow stops at the first failure. On Clients with holder
// info and on Clients without (whose scripts take their common paths: a
// free name, the release of a hold's last count, which may need fewer
// writes: every command is needed in one of the two).
func TestDeniedCommandLeavesNothingBehind(t *testing.T) {
	e := newEnv(t)
	needed := map[string]bool{} // primitive/-command: a step failed without it
	for _, info := range []bool{true, false} {
		admin := redisync.New(dial(t), redisync.WithHolderInfo(info))
		t.Cleanup(func() { admin.Close() })
		for _, f := range aclFlows {
			for _, cmd := range f.writes {
				t.Run(fmt.Sprintf("%s/-%s/info=%v", f.primitive, cmd, info), func(t *testing.T) {
					e.do(t, "FLUSHALL")
					user := "deny-" + cmd
					e.do(t, "ACL", "SETUSER", user, "reset", "on", ">pw", "~*", "&*", "+@all", "-"+cmd)
					t.Cleanup(func() { e.do(t, "ACL", "DELUSER", user) })
					rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: user, Password: "pw",
						DisableCache: true, ForceSingleClient: true})
					require.NoError(t, err)
					c := redisync.New(rc, redisync.WithHolderInfo(info))
					defer rc.Close()
					defer c.Close()
					for _, s := range f.steps(c, admin) {
						before := e.snapshot(t)
						ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
						err := s.run(ctx)
						cancel()
						if err == nil {
							continue
						}
						needed[f.primitive+"/-"+cmd] = true
						assert.Contains(t, strings.ToLower(err.Error()), cmd, "%s: the error names the denied command", s.label)
						assert.Contains(t, err.Error(), "NOPERM", "%s: the error is NOPERM", s.label)
						assert.Empty(t, diff(before, e.snapshot(t)), "%s failed (%v) but changed Redis", s.label, err)
						break
					}
				})
			}
		}
	}
	for _, f := range aclFlows {
		for _, cmd := range f.writes {
			assert.True(t, needed[f.primitive+"/-"+cmd], "%s: no step needed %s: the list of write commands is stale", f.primitive, cmd)
		}
	}
}

// A denied PUBLISH costs only the wake-up: the release stands, and
// waiters fall back to their bounded poll. With holder info and without.
func TestDeniedPublishStillReleases(t *testing.T) {
	e := newEnv(t)
	e.do(t, "ACL", "SETUSER", "deny-publish", "reset", "on", ">pw", "~*", "&*", "+@all", "-publish")
	t.Cleanup(func() { e.do(t, "ACL", "DELUSER", "deny-publish") })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: "deny-publish", Password: "pw",
		DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	defer rc.Close()
	for _, info := range []bool{true, false} {
		e.do(t, "FLUSHALL")
		admin := redisync.New(dial(t), redisync.WithHolderInfo(info))
		c := redisync.New(rc, redisync.WithHolderInfo(info))
		for _, f := range aclFlows {
			for _, s := range f.steps(c, admin) {
				require.NoError(t, s.run(bg()), "holder info %v: %s %s", info, f.primitive, s.label)
			}
		}
		c.Close()
		admin.Close()
	}
}
