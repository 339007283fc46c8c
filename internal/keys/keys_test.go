package keys

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
		d, ok := Derived(LockChannelPrefix, name)
		assert.True(t, ok, name)
		assert.Equal(t, Slot(name), Slot(d), "%s -> %s", name, d)
	}
}

func TestDerivedMatchesRedissonWhereRedissonIsRight(t *testing.T) {
	d, _ := Derived(LockChannelPrefix, "orders:42")
	assert.Equal(t, "redisson_lock__channel:{orders:42}", d)
	d, _ = Derived(LockChannelPrefix, "{x}y")
	assert.Equal(t, "redisson_lock__channel:{x}y", d)
}

func TestDerivedReportsNamesThatCannotShareASlot(t *testing.T) {
	for _, name := range []string{"{}", "x}", "}"} {
		_, ok := Derived(LockChannelPrefix, name)
		assert.False(t, ok, name)
	}
}
