package keys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestHashTagFollowsRedisRules(t *testing.T) {
	cases := []struct {
		key, tag string
		ok       bool
	}{
		{"plain", "", false},
		{"{x}y", "x", true},
		{"a{b", "", false},
		{"{}", "", false},
		{"{}x{y}", "", false}, // first '{' decides, its tag is empty
		{"a{b}{c}", "b", true},
		{"}{x}", "x", true},
		{"{{x}}", "{x", true},
	}
	for _, c := range cases {
		tag, ok := HashTag(c.key)
		assert.Equal(t, c.ok, ok, c.key)
		assert.Equal(t, c.tag, tag, c.key)
	}
}

// Known slots from the Redis Cluster specification and redis-cli CLUSTER KEYSLOT.
func TestSlotMatchesRedis(t *testing.T) {
	assert.Equal(t, uint16(12739), Slot("123456789")) // CRC16 check value 0x31C3 mod 16384
	assert.Equal(t, Slot("user1000"), Slot("{user1000}.following"))
	assert.Equal(t, Slot("foo"), Slot("x{foo}y"))
}

func TestDerivedSharesTheSlotOfTheName(t *testing.T) {
	for _, name := range []string{"orders:42", "{x}y", "a{b", "a{b}c", "{{x}}", "é✓", "a b"} {
		d, ok := Derived(SemHoldersPrefix, name)
		assert.True(t, ok, name)
		assert.Equal(t, Slot(name), Slot(d), "%s -> %s", name, d)
	}
	// Redisson's names are in the name's slot exactly when Derived says so.
	for _, name := range []string{"orders:42", "{x}y", "a{b", "a{b}c", "{{x}}", "{}x", "a{}b", "x}", "é✓"} {
		for _, prefix := range []string{LockChannelPrefix, RWChannelPrefix} {
			d, ok := Derived(prefix, name)
			assert.Equal(t, ok, Slot(name) == Slot(d), "%s -> %s", name, d)
		}
		assert.Equal(t, Slot(name) == Slot(Tagged(name)+":o:rwlock_timeout:1"), ok(name), name)
	}
}

func ok(name string) bool { _, ok := Derived(LockChannelPrefix, name); return ok }

// TestRedissonNames is the table interop/java's NamesTest checks against
// Redisson itself (issue 16): Redisson decides by "the name contains '{'",
// not by the effective hash tag, and so must we for the names we share.
func TestRedissonNames(t *testing.T) {
	for _, c := range []struct{ name, lock, rw, base string }{
		{"x", "redisson_lock__channel:{x}", "redisson_rwlock:{x}", "{x}"},
		{"{t}x", "redisson_lock__channel:{t}x", "redisson_rwlock:{t}x", "{t}x"},
		{"a{b", "redisson_lock__channel:a{b", "redisson_rwlock:a{b", "a{b"},
		{"{}x", "redisson_lock__channel:{}x", "redisson_rwlock:{}x", "{}x"},
		{"a{}b", "redisson_lock__channel:a{}b", "redisson_rwlock:a{}b", "a{}b"},
	} {
		lock, _ := Derived(LockChannelPrefix, c.name)
		rw, _ := Derived(RWChannelPrefix, c.name)
		assert.Equal(t, c.lock, lock, c.name)
		assert.Equal(t, c.rw, rw, c.name)
		assert.Equal(t, c.base, Tagged(c.name), c.name)
	}
}

// TestRedissonNamesMeetOnlyAsDocumented: two names get one Redisson channel
// only when one is the other in braces and the other contains no '{' (the
// package doc's "x" and "{x}").
func TestRedissonNamesMeetOnlyAsDocumented(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]rune{'a', 'b', '{', '}', ':'})
		a := string(rapid.SliceOfN(alphabet, 1, 6).Draw(t, "a"))
		b := string(rapid.SliceOfN(alphabet, 1, 6).Draw(t, "b"))
		ca, _ := Derived(LockChannelPrefix, a)
		cb, _ := Derived(LockChannelPrefix, b)
		meet := a == b ||
			(!strings.Contains(a, "{") && b == "{"+a+"}") ||
			(!strings.Contains(b, "{") && a == "{"+b+"}")
		if (ca == cb) != meet {
			t.Fatalf("%q and %q: channels %q, %q", a, b, ca, cb)
		}
		if (Tagged(a) == Tagged(b)) != meet {
			t.Fatalf("%q and %q: read-hold bases %q, %q", a, b, Tagged(a), Tagged(b))
		}
	})
}

func TestRedissonChannelsFollowRedisson(t *testing.T) {
	for _, prefix := range []string{LockChannelPrefix, RWChannelPrefix} {
		d, _ := Derived(prefix, "orders:42")
		assert.Equal(t, prefix+":{orders:42}", d)
		d, _ = Derived(prefix, "{x}y")
		assert.Equal(t, prefix+":{x}y", d)
		// Redisson's own ambiguity, kept for interop: "x" and "{x}" share it.
		a, _ := Derived(prefix, "x")
		b, _ := Derived(prefix, "{x}")
		assert.Equal(t, a, b)
	}
}

func TestOwnKeysEncodeTheWholeName(t *testing.T) {
	cases := []struct{ name, key string }{
		{"x", "redisync_fair_queue:{x}:x"},
		{"{x}", "redisync_fair_queue:{x}:{x}"},
		{"{x}y", "redisync_fair_queue:{x}:{x}y"},
		{"a{b", "redisync_fair_queue:{a{b}:a{b"},
		{"{}", "redisync_fair_queue:{}:{}"},
		{"x}", "redisync_fair_queue:{}:x}"},
	}
	for _, c := range cases {
		d, _ := Derived(FairQueuePrefix, c.name)
		assert.Equal(t, c.key, d, c.name)
	}
}

// The collision that a plain "prefix:{H}:name" with H = name for every
// untagged name would have: a tag may contain '{', and an untagged name
// '}'. Such names must not meet.
func TestDerivedSeparatesNamesThatLookAlike(t *testing.T) {
	pairs := [][2]string{
		{"x", "{x}"},
		{"x{}:{x{", "{x{}:x{}:{x{"},
		{"a}:b", "b}:a}:b"},
		{"{}", "}{"},
	}
	for _, p := range pairs {
		a, _ := Derived(SemPermitsPrefix, p[0])
		b, _ := Derived(SemPermitsPrefix, p[1])
		assert.NotEqual(t, a, b, "%q and %q", p[0], p[1])
	}
}

// nameOf reads the name back from one of our derived keys, the inverse the
// package doc's proof describes; ok is false when key is not prefix's.
func nameOf(prefix, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix+":{")
	if !ok {
		return "", false
	}
	end := strings.IndexByte(rest, '}')
	if end < 0 || !strings.HasPrefix(rest[end:], "}:") {
		return "", false
	}
	return rest[end+2:], true
}

// names draws names from an alphabet of the characters that matter to hash
// tags and to our separators, so collisions would be found if they existed.
func names() *rapid.Generator[string] {
	return rapid.StringOfN(rapid.SampledFrom([]rune{'{', '}', ':', 'x', 'y', '_'}), 1, 12, -1)
}

func TestDerivedIsInjective(t *testing.T) {
	own := []string{LockTokenPrefix, FairQueuePrefix, FairHeartbeatPrefix, FairChannelPrefix, RWWritersPrefix,
		SemHoldersPrefix, SemPermitsPrefix, SemQueuePrefix, SemHeartbeatPrefix, SemChannelPrefix, RedlockTokenPrefix,
		HolderInfoPrefix}
	rapid.Check(t, func(t *rapid.T) {
		a, b := names().Draw(t, "a"), names().Draw(t, "b")
		pa, pb := rapid.SampledFrom(own).Draw(t, "pa"), rapid.SampledFrom(own).Draw(t, "pb")
		ka, okA := Derived(pa, a)
		kb, _ := Derived(pb, b)
		if (a != b || pa != pb) && ka == kb {
			t.Fatalf("%s(%q) and %s(%q) share key %q", pa, a, pb, b, ka)
		}
		back, ok := nameOf(pa, ka)
		if !ok || back != a {
			t.Fatalf("key %q does not give back %q (got %q)", ka, a, back)
		}
		if okA && Slot(ka) != Slot(a) {
			t.Fatalf("key %q is not in the slot of %q", ka, a)
		}
		if Reserved(ka) == "" {
			t.Fatalf("key %q is not reserved: a lock could be named after it", ka)
		}
	})
}

func TestReservedRefusesNamesOfInternalKeys(t *testing.T) {
	for _, name := range []string{"redisync_sem_permits:{s}", "redisync_lock_token:{x}", "redisync_",
		"{x}:owner:rwlock_timeout:1", "redisson_lock_queue:{x}", "redisson_lock_timeout:{x}"} {
		assert.NotEmpty(t, Reserved(name), name)
	}
	for _, name := range []string{"orders:42", "redisync", "redisson_lock__channel:{x}", "rwlock_timeout"} {
		assert.Empty(t, Reserved(name), name)
	}
}

func FuzzDerived(f *testing.F) {
	for _, s := range []string{"x", "{x}", "a{b", "{}", "x}", "{{x}}", "x{}:{x{"} {
		f.Add(s, "{"+s+"}")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == "" || b == "" {
			return
		}
		ka, okA := Derived(SemHoldersPrefix, a)
		kb, _ := Derived(SemHoldersPrefix, b)
		require.Equal(t, a == b, ka == kb, "%q %q", a, b)
		if okA {
			require.Equal(t, Slot(a), Slot(ka), a)
		}
	})
}

func TestDerivedReportsNamesThatCannotShareASlot(t *testing.T) {
	for _, name := range []string{"{}", "x}", "}", "a{b", "{}x"} {
		_, ok := Derived(LockChannelPrefix, name)
		assert.False(t, ok, name)
	}
}
