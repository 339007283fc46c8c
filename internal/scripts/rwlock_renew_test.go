package scripts

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// rwHold is one read-write lock hold on the name n, laid out as the
// acquires lay it out, for rwlock_renew.lua.
type rwHold struct {
	n, owner string
	write    bool
	token    uint64
}

func (h rwHold) hash() string  { return h.n }
func (h rwHold) phase() string { return "redisync_rwlock_token:{" + h.n + "}:" + h.n }
func (h rwHold) timeout(i int) string {
	return "{" + h.n + "}:" + h.owner + ":rwlock_timeout:" + strconv.Itoa(i)
}

// item is the hold's renewal item, as rwlock.New builds it.
func (h rwHold) item() *RenewItem {
	if h.write {
		f := h.owner + ":write"
		return &RenewItem{Key: h.n, Owner: f, Token: h.token, TokenSuffix: " w " + f, Phase: h.phase()}
	}
	return &RenewItem{Key: h.n, Owner: h.owner, Token: h.token, TokenSuffix: " r", Prefix: h.timeout(1), Phase: h.phase()}
}

// renewRW renews holds in one batch with a lease of ms and returns the reply.
func renewRW(t *testing.T, rc rueidis.Client, ms int, holds ...rwHold) []bool {
	t.Helper()
	items := make([]*RenewItem, len(holds))
	for i, h := range holds {
		items[i] = h.item()
	}
	item := func(i int) *RenewItem { return items[i] }
	alive, err := RWLockRenew.ParseRenew(RWLockRenew.exec(context.Background(), rc, strconv.Itoa(ms), len(items), item), len(items), item)
	require.NoError(t, err)
	return alive
}

func pttl(t *testing.T, rc rueidis.Client, key string) int64 {
	t.Helper()
	n, err := redistest.Do(t, rc, "PTTL", key).AsInt64()
	require.NoError(t, err)
	return n
}

func do(t *testing.T, rc rueidis.Client, cmd ...string) {
	t.Helper()
	require.NoError(t, redistest.Do(t, rc, cmd...).Error())
}

// layRead lays out a read phase with token tok of reader h (count reads),
// every key with an expiry of ms.
func layRead(t *testing.T, rc rueidis.Client, h rwHold, count, ms int) {
	do(t, rc, "HSET", h.hash(), "mode", "read", h.owner, strconv.Itoa(count))
	do(t, rc, "PEXPIRE", h.hash(), strconv.Itoa(ms))
	do(t, rc, "SET", h.phase(), strconv.FormatUint(h.token, 10)+" r", "PX", strconv.Itoa(ms))
	for i := 1; i <= count; i++ {
		do(t, rc, "SET", h.timeout(i), "1", "PX", strconv.Itoa(ms))
	}
}

// layWrite lays out writer h's write phase with token tok, with an expiry
// of ms.
func layWrite(t *testing.T, rc rueidis.Client, h rwHold, ms int) {
	f := h.owner + ":write"
	do(t, rc, "HSET", h.hash(), "mode", "write", f, "1")
	do(t, rc, "PEXPIRE", h.hash(), strconv.Itoa(ms))
	do(t, rc, "SET", h.phase(), strconv.FormatUint(h.token, 10)+" w "+f, "PX", strconv.Itoa(ms))
}

const (
	shortMs = 5000  // what the keys have left before the renewal
	leaseMs = 30000 // the renewal's lease
)

// extended reports whether key's expiry was raised to about the lease.
func extended(t *testing.T, rc rueidis.Client, key string) bool {
	return pttl(t, rc, key) > shortMs
}

// The common paths: a read hold and a write hold of count 1 are renewed,
// with their hash, their phase key and the read hold's timeout key.
func TestRWRenewExtendsTheHoldsKeys(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	r := rwHold{n: "r", owner: "o", token: 100}
	w := rwHold{n: "w", owner: "o", write: true, token: 200}
	layRead(t, rc, r, 1, shortMs)
	layWrite(t, rc, w, shortMs)
	assert.Equal(t, []bool{true, true}, renewRW(t, rc, leaseMs, r, w))
	for _, k := range []string{r.hash(), r.phase(), r.timeout(1), w.hash(), w.phase()} {
		assert.True(t, extended(t, rc, k), "%s: pttl %d", k, pttl(t, rc, k))
	}
}

// The rare paths that still renew: counts above 1, a read under the
// owner's own write phase, a write phase a Redisson release downgraded, a
// phase a Redisson client began (no phase key: nothing created), the old
// layout's token in the hash.
func TestRWRenewRarePathsStillRenew(t *testing.T) {
	rc := redistest.Start(t).Client(t)

	nested := rwHold{n: "nested", owner: "o", token: 1}
	layRead(t, rc, nested, 3, shortMs)

	under := rwHold{n: "under", owner: "o", token: 2} // reads under its own write
	layWrite(t, rc, rwHold{n: "under", owner: "o", write: true, token: 2}, shortMs)
	do(t, rc, "HSET", "under", "o", "1")
	do(t, rc, "SET", under.timeout(1), "1", "PX", strconv.Itoa(shortMs))

	downgraded := rwHold{n: "down", owner: "o", token: 3} // Redisson's write release left "mode" read
	layWrite(t, rc, rwHold{n: "down", owner: "o", write: true, token: 3}, shortMs)
	do(t, rc, "HSET", "down", "mode", "read", "o", "1")
	do(t, rc, "HDEL", "down", "o:write")
	do(t, rc, "SET", downgraded.timeout(1), "1", "PX", strconv.Itoa(shortMs))

	redisson := rwHold{n: "redisson", owner: "o", token: 4}
	layRead(t, rc, redisson, 1, shortMs)
	do(t, rc, "DEL", redisson.phase())

	old := rwHold{n: "old", owner: "o", write: true, token: 5}
	do(t, rc, "HSET", "old", "mode", "write", "o:write", "1", "redisync:token", "t5")
	do(t, rc, "PEXPIRE", "old", strconv.Itoa(shortMs))

	assert.Equal(t, []bool{true, true, true, true, true}, renewRW(t, rc, leaseMs, nested, under, downgraded, redisson, old))
	for _, k := range []string{"nested", nested.phase(), nested.timeout(1), nested.timeout(2), nested.timeout(3),
		"under", under.phase(), under.timeout(1), "down", downgraded.phase(), downgraded.timeout(1),
		"redisson", redisson.timeout(1), "old"} {
		assert.True(t, extended(t, rc, k), "%s: pttl %d", k, pttl(t, rc, k))
	}
	assert.Equal(t, int64(-2), pttl(t, rc, redisson.phase()), "no phase key is made for a Redisson phase")
}

// A later hold of the same owner (the phase key, or the old layout's field,
// names another token) is not renewed, and nothing of it is written.
func TestRWRenewLeavesALaterHoldOfTheSameOwnerAlone(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	r := rwHold{n: "r", owner: "o", token: 100}
	w := rwHold{n: "w", owner: "o", write: true, token: 200}
	nested := rwHold{n: "nested", owner: "o", token: 300}
	layRead(t, rc, rwHold{n: "r", owner: "o", token: 101}, 1, shortMs)
	layWrite(t, rc, rwHold{n: "w", owner: "o", write: true, token: 201}, shortMs)
	layRead(t, rc, rwHold{n: "nested", owner: "o", token: 301}, 2, shortMs)
	old := rwHold{n: "old", owner: "o", write: true, token: 5}
	do(t, rc, "HSET", "old", "mode", "write", "o:write", "1", "redisync:token", "t6")
	do(t, rc, "PEXPIRE", "old", strconv.Itoa(shortMs))

	assert.Equal(t, []bool{false, false, false, false}, renewRW(t, rc, leaseMs, r, w, nested, old))
	for _, k := range []string{"r", r.phase(), r.timeout(1), "w", w.phase(),
		"nested", nested.phase(), nested.timeout(1), nested.timeout(2), "old"} {
		assert.False(t, extended(t, rc, k), "%s: pttl %d", k, pttl(t, rc, k))
	}
}

// Foreign data under a hold's keys: the hold is gone (or, under the phase
// key, the phase is unknown), the other holds of the batch are renewed,
// and the foreign key keeps its expiry — none, or its own. A user's string
// without expiry under a timeout key's name is no timeout key of ours, even
// "1".
func TestRWRenewNeverWritesForeignKeys(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	good := rwHold{n: "good", owner: "o", token: 1}
	layRead(t, rc, good, 1, shortMs)

	var holds []rwHold
	var foreign []string
	plant := func(h rwHold, key string, cmd ...string) {
		holds = append(holds, h)
		foreign = append(foreign, key)
		do(t, rc, "DEL", key)
		do(t, rc, cmd...)
	}
	for i, c := range [][]string{
		{"SET", "", "user"},
		{"SET", "", "1"},
		{"SET", "", "2", "PX", strconv.Itoa(shortMs)},
		{"RPUSH", "", "a"},
		{"HSET", "", "f", "v"},
	} {
		h := rwHold{n: "timeout" + strconv.Itoa(i), owner: "o", token: 10}
		layRead(t, rc, h, 1, shortMs)
		plant(h, h.timeout(1), append([]string{c[0], h.timeout(1)}, c[2:]...)...)
	}
	nested := rwHold{n: "second", owner: "o", token: 11} // the second of two timeout keys
	layRead(t, rc, nested, 2, shortMs)
	plant(nested, nested.timeout(2), "SET", nested.timeout(2), "1")
	list := rwHold{n: "list", owner: "o", token: 12} // the hash itself
	plant(list, "list", "RPUSH", "list", "a")
	do(t, rc, "PEXPIRE", "list", strconv.Itoa(shortMs))
	rlock := rwHold{n: "rlock", owner: "o", write: true, token: 13} // a hash with the field and no "mode"
	plant(rlock, "rlock", "HSET", "rlock", "o:write", "1", "redisync:token", "13")
	do(t, rc, "PEXPIRE", "rlock", strconv.Itoa(shortMs))

	alive := renewRW(t, rc, leaseMs, append([]rwHold{good}, holds...)...)
	assert.True(t, alive[0], "the hold beside them is renewed")
	assert.True(t, extended(t, rc, "good"))
	for i, k := range foreign {
		assert.False(t, alive[i+1], "hold on %s", holds[i].n)
		got := pttl(t, rc, k)
		assert.True(t, got == -1 || got <= shortMs, "%s: pttl %d: written", k, got)
		assert.False(t, extended(t, rc, holds[i].hash()), "%s: the hash was extended", holds[i].n)
	}

	// A phase key of another type: the phase is unknown (as a Redisson
	// phase), the hold is renewed, the list is not touched.
	p := rwHold{n: "phase", owner: "o", token: 20}
	layRead(t, rc, p, 1, shortMs)
	do(t, rc, "DEL", p.phase())
	do(t, rc, "RPUSH", p.phase(), "a")
	assert.Equal(t, []bool{true}, renewRW(t, rc, leaseMs, p))
	assert.Equal(t, int64(-1), pttl(t, rc, p.phase()))
	assert.True(t, extended(t, rc, "phase"))
}

// A renewal never shortens an expiry: a hash or a timeout key that lives
// longer than the lease (a nested hold with a longer fixed lease) keeps
// it, and the phase key follows the hash.
func TestRWRenewNeverShortens(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	const longMs = 120000
	r := rwHold{n: "r", owner: "o", token: 1}
	layRead(t, rc, r, 2, shortMs)
	do(t, rc, "PEXPIRE", "r", strconv.Itoa(longMs))
	do(t, rc, "PEXPIRE", r.timeout(2), strconv.Itoa(longMs))
	w := rwHold{n: "w", owner: "o", write: true, token: 2}
	layWrite(t, rc, w, shortMs)
	do(t, rc, "PEXPIRE", "w", strconv.Itoa(longMs))

	assert.Equal(t, []bool{true, true}, renewRW(t, rc, leaseMs, r, w))
	for _, k := range []string{"r", r.timeout(2), "w", r.phase(), w.phase()} {
		assert.Greater(t, pttl(t, rc, k), int64(leaseMs), k)
	}
	assert.True(t, extended(t, rc, r.timeout(1)))
}
