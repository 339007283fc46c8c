package scripts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// TestHolderRecordIsWrittenOnlyWhileTheLockCarriesTheHold: the record
// write follows the renewal that found the hold alive in another call, so
// a release, a loss or a force-unlock in between leaves a lock without the
// hold — or with the owner's next hold. Each layout's look: an rlock hash
// with another token (the owner's next hold) or none at all, a read-write
// lock's hash without the hold's field, a semaphore's holders without the
// permit, a Redlock key with another value, and a key of another type get
// no record (nor a refresh); the same records are written while the
// holds are there.
func TestHolderRecordIsWrittenOnlyWhileTheLockCarriesTheHold(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	ctx := context.Background()
	do := func(args ...string) { require.NoError(t, redistest.Do(t, rc, args...).Error()) }
	do("HSET", "{r}", "o", "1", "redisync:token", "7")
	do("HSET", "{w}", "mode", "write", "o:write", "1")
	do("ZADD", "{s}", "99999999999999", "p")
	do("SET", "{l}", "v")
	do("RPUSH", "{x}", "o")
	type rec struct {
		name        string
		lock, field string
		token       string
		held        bool
	}
	recs := []rec{
		{"rlock hold", "{r}", "o", "7", true},
		{"rlock, the owner's next hold", "{r}", "o", "6", false},
		{"rlock without a token known", "{r}", "o", "0", true},
		{"rlock, another owner", "{r}", "q", "0", false},
		{"rlock released", "{gone}", "o", "7", false},
		{"rwlock write hold", "{w}", "o:write", "9", true},
		{"rwlock, another field", "{w}", "q:write", "9", false},
		{"semaphore permit", "{s}", "p", "3", true},
		{"semaphore permit taken back", "{s}", "q", "3", false},
		{"redlock hold", "{l}", "v", "0", true},
		{"redlock, another hold's value", "{l}", "w", "0", false},
		{"a list under the lock's name", "{x}", "o", "0", false},
	}
	for i, r := range recs {
		info := "{info:" + string(rune('a'+i)) + "}"
		res := rc.Do(ctx, HolderRecord(rc, "payload", "60000", 1, func(int) Record {
			return Record{Info: info, Field: r.field, Lock: r.lock, Token: r.token, AgeMs: 5}
		}))
		if IsNoScript(res.Error()) {
			res = rc.Do(ctx, HolderRecordEval(rc, "payload", "60000", 1, func(int) Record {
				return Record{Info: info, Field: r.field, Lock: r.lock, Token: r.token, AgeMs: 5}
			}))
		}
		require.NoError(t, res.Error(), r.name)
		n, err := redistest.Do(t, rc, "HEXISTS", info, r.field).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, r.held, n == 1, "%s: record written", r.name)
	}
	// A refresh raises a record's expiry only while its hold is there.
	do("HSET", "{info:z}", "o", "1|1|payload")
	do("PEXPIRE", "{info:z}", "5000")
	for _, lock := range []string{"{gone}", "{r}"} {
		res := rc.Do(ctx, HolderRecord(rc, "payload", "60000", 1, func(int) Record {
			return Record{Info: "{info:z}", Field: "o", Lock: lock, Token: "7", Refresh: true}
		}))
		require.NoError(t, res.Error())
		pttl, err := redistest.Do(t, rc, "PTTL", "{info:z}").AsInt64()
		require.NoError(t, err)
		assert.Equal(t, lock == "{r}", pttl > 5000, "refresh beside %s: expiry raised", lock)
	}
}
