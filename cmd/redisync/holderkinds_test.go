package main

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Every kind of hold records who took it, and the command shows it: inspect
// (table and JSON) and unlock --force's prompt name the holder's pid and
// label for rlock, fairlock, rwlock (readers and writer), semaphore
// permits, a Redlock's key on this server and each component of a
// multilock — the label escaped, since anyone chooses it — and unlock
// --force --yes takes the record away with the hold. (rwlock recorded
// nothing, and inspect refused a Redlock's key as "a Redis string".)
func TestEveryKindShowsWhoHoldsItInTheCommand(t *testing.T) {
	const evil = "nightly \r\x1b[2K nothing is held\u202e"
	const shown = `nightly \r\x1b[2K nothing is held\u202e`
	e := locktest.Setup(t, redisync.WithLabel(evil), redisync.WithWatchdogTimeout(1500*time.Millisecond))
	ctx := locktest.Bg()
	pid := strconv.Itoa(os.Getpid())
	cases := []struct {
		kind    string
		names   []string
		holders int
		take    func(t *testing.T, names []string)
	}{
		{"lock", []string{"k:rlock"}, 1, func(t *testing.T, n []string) { require.NoError(t, rlock.New(e.C, n[0]).Lock(ctx)) }},
		{"lock", []string{"k:fairlock"}, 1, func(t *testing.T, n []string) { require.NoError(t, fairlock.New(e.C, n[0]).Lock(ctx)) }},
		{"rwlock", []string{"k:readers"}, 2, func(t *testing.T, n []string) {
			require.NoError(t, rwlock.New(e.C, n[0]).RLock(ctx))
			require.NoError(t, rwlock.New(e.C, n[0]).RLock(ctx))
		}},
		{"rwlock", []string{"k:writer"}, 1, func(t *testing.T, n []string) { require.NoError(t, rwlock.New(e.C, n[0]).Lock(ctx)) }},
		{"semaphore", []string{"k:sem"}, 2, func(t *testing.T, n []string) {
			for range 2 {
				_, err := semaphore.New(e.C, n[0], 3).Acquire(ctx, 1)
				require.NoError(t, err)
			}
		}},
		{"redlock", []string{"k:redlock"}, 1, func(t *testing.T, n []string) {
			require.NoError(t, redlock.New([]*redisync.Client{e.C}, n[0]).Lock(ctx))
		}},
		{"lock", []string{"{k:multi}:a", "{k:multi}:b"}, 1, func(t *testing.T, n []string) {
			require.NoError(t, multilock.New(rlock.New(e.C, n[0]), rlock.New(e.C, n[1])).Lock(ctx))
		}},
	}
	for _, c := range cases {
		t.Run(c.names[0], func(t *testing.T) {
			c.take(t, c.names)
			for _, name := range c.names {
				awaitRecords(t, e, name, c.holders)
			}
			for _, name := range c.names {
				r := cli(t, e, "", "inspect", "--json", name)
				require.Equal(t, 0, r.code, r.stderr)
				assert.NotContains(t, r.stdout, "\x1b")
				var got inspection
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
				assert.Equal(t, c.kind, got.Kind)
				require.Len(t, got.Holders, c.holders, r.stdout)
				for _, h := range got.Holders {
					require.NotNil(t, h.Info, "no holder info for %s in %s", h.Owner, r.stdout)
					assert.Equal(t, evil, h.Info.Label)
					assert.Equal(t, os.Getpid(), h.Info.PID)
				}

				r = cli(t, e, "", "inspect", name)
				require.Equal(t, 0, r.code, r.stderr)
				assert.NotContains(t, r.stdout, "\x1b")
				assert.Contains(t, r.stdout, shown)
				assert.Contains(t, r.stdout, pid)

				r = cli(t, e, "n\n", "unlock", "--force", name)
				assert.NotEqual(t, 0, r.code)
				assert.NotContains(t, r.stdout+r.stderr, "\x1b")
				assert.Contains(t, r.stderr, "label "+shown)
				assert.Contains(t, r.stderr, "pid "+pid)

				side, _ := keys.Derived(keys.HolderInfoPrefix, name)
				require.True(t, e.Exists(t, side))
				r = cli(t, e, "", "unlock", "--force", "--yes", name)
				require.Equal(t, 0, r.code, r.stderr)
				assert.False(t, e.Exists(t, side), "unlock --force left the holders' records")
				assert.False(t, e.Exists(t, name) && c.kind != "semaphore", "unlock --force left the lock")
			}
		})
	}
}
