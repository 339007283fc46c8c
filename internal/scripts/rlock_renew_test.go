package scripts

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// TestLockRenewJudgesEachHoldOfAMixedBatch: a hold passes its token alone,
// a hold without one (token 0) its owner too, so the holds of one batch
// take one or two arguments each. In a batch that mixes them, each hold is
// judged by its own: the live holds with a token and without one are
// renewed (their PTTL raised to the lease), and a later hold of the owner
// (another token), a hold without a token whose owner is gone, and a key of
// another type are not, nor extended.
func TestLockRenewJudgesEachHoldOfAMixedBatch(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	ctx := context.Background()
	do := func(args ...string) { require.NoError(t, redistest.Do(t, rc, args...).Error()) }
	do("HSET", "{a}", "o", "1", "redisync:token", "11")
	do("HSET", "{b}", "p", "1") // a Redisson hold: no token
	do("HSET", "{c}", "o", "1", "redisync:token", "13")
	do("HSET", "{d}", "q", "1")
	do("SET", "{e}", "x")
	do("HSET", "{f}", "o", "1", "redisync:token", "16")
	for _, k := range []string{"{a}", "{b}", "{c}", "{d}", "{e}", "{f}"} {
		do("PEXPIRE", k, "1000")
	}
	items := []*RenewItem{
		{Key: "{a}", Owner: "o", Token: 11},
		{Key: "{b}", Owner: "p"},
		{Key: "{c}", Owner: "o", Token: 12}, // the owner's later hold has 13
		{Key: "{d}", Owner: "p"},            // q holds it
		{Key: "{e}", Owner: "o", Token: 15}, // a string now
		{Key: "{f}", Owner: "o", Token: 16},
	}
	res := LockRenew.exec(ctx, rc, "60000", len(items), func(i int) *RenewItem { return items[i] })
	alive, err := LockRenew.ParseRenew(res, len(items), func(i int) *RenewItem { return items[i] })
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, false, false, false, true}, alive)
	for i, it := range items {
		pttl, err := redistest.Do(t, rc, "PTTL", it.Key).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, alive[i], pttl > 1000, "%s: extended", it.Key)
	}
}

// TestParseRenewReadsAByteForEachHold: a renewal reply is a string with a
// byte per hold ("1": live); one of another length than the batch, or an
// array, fails the batch.
func TestParseRenewReadsAByteForEachHold(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	reply := func(lua string) rueidis.RedisResult { return redistest.Do(t, rc, "EVAL", lua, "0") }
	alive, err := LockRenew.ParseRenew(reply("return '101'"), 3, nil)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, true}, alive)
	_, err = LockRenew.ParseRenew(reply("return '101'"), 2, nil)
	assert.Error(t, err, "a byte too many")
	_, err = LockRenew.ParseRenew(reply("return {1, 0, 1}"), 3, nil)
	assert.Error(t, err, "an array")
}
