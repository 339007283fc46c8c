package keyspace

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// TestMultilockDeniedWriteOnOneLockLeavesNothingBehind: a multilock of
// rlocks in one slot takes them in one script (rlock_acquire_all.lua),
// whose common path (every name free) writes HSET and PEXPIRE per lock. A
// user the ACL denies one of those commands on one lock's key only (a
// selector allows it on the others) gets NOPERM naming it, and nothing is
// written on any lock — also where the denied write is not the script's
// first.
func TestMultilockDeniedWriteOnOneLockLeavesNothingBehind(t *testing.T) {
	e := newEnv(t)
	names := []string{"{ml}:a", "{ml}:b"}
	for _, cmd := range []string{"hset", "pexpire"} {
		for i, denied := range names {
			t.Run(cmd+"/"+denied, func(t *testing.T) {
				e.do(t, "FLUSHALL")
				user := "deny-ml"
				// Root: every command on every key but cmd; the selector
				// allows cmd on the other lock's hash.
				e.do(t, "ACL", "SETUSER", user, "reset", "on", ">pw", "~*", "&*", "+@all", "-"+cmd,
					"(+"+cmd+" ~"+names[1-i]+")")
				t.Cleanup(func() { e.do(t, "ACL", "DELUSER", user) })
				rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: user, Password: "pw",
					DisableCache: true, ForceSingleClient: true})
				require.NoError(t, err)
				defer rc.Close()
				c := redisync.New(rc)
				defer c.Close()
				m := multilock.New(rlock.New(c, names[0], rlock.WithLease(aclLease)), rlock.New(c, names[1], rlock.WithLease(aclLease)))
				before := e.snapshot(t)
				ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
				defer cancel()
				err = m.Lock(ctx)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "NOPERM")
				assert.Contains(t, strings.ToLower(err.Error()), cmd, "the error names the denied command")
				assert.Empty(t, diff(before, e.snapshot(t)), "the denied acquire changed Redis")
			})
		}
	}
}
