// Package keys derives every key and channel name from a lock name, in one place.
//
// Redis Cluster hashes a key by its hash tag when it has one: the part between
// the first '{' and the first '}' after it, if that part is not empty; otherwise
// by the whole key. Every key and channel of one primitive must hash to the slot
// of the primitive's main key (the raw name), so derived names are built from the
// effective hash tag exactly as Redis computes it — not by "contains '{'", which
// is Redisson's shortcut and breaks for names such as "a{b" or "{}".
package keys

import "strings"

// Name prefixes. The lock channel prefix is Redisson's, so waiters of both
// libraries hear each other's releases.
// The rwlock channel prefix is Redisson's too.
const (
	LockChannelPrefix   = "redisson_lock__channel"
	LockTokenPrefix     = "redisync_lock_token"
	FairQueuePrefix     = "redisync_fair_queue"
	FairHeartbeatPrefix = "redisync_fair_heartbeat"
	FairChannelPrefix   = "redisync_fair_channel"
	RWChannelPrefix     = "redisson_rwlock"
	RWWritersPrefix     = "redisync_rwlock_writers"
	SemHoldersPrefix    = "redisync_sem_holders"
	SemPermitsPrefix    = "redisync_sem_permits"
	SemQueuePrefix      = "redisync_sem_queue"
	SemHeartbeatPrefix  = "redisync_sem_heartbeat"
	SemChannelPrefix    = "redisync_sem_channel"
	RedlockTokenPrefix  = "redisync_redlock_token"
)

// HashTag returns the effective hash tag of key and whether it has one.
func HashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 { // no closing brace, or "{}" (empty tag)
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// Derived returns prefix + ":" + a form of name that hashes to the same slot
// as name itself. ok is false when no such form exists: the name has no
// effective hash tag but contains '}' (for example "{}" or "x}"), so no tag can
// reproduce its whole-string hash. Such names work on a single server but not
// on a Redis Cluster.
//
// The result equals Redisson's naming whenever Redisson's naming is correct:
// "prefix:name" when name has a tag, "prefix:{name}" otherwise.
func Derived(prefix, name string) (derived string, ok bool) {
	if _, tagged := HashTag(name); tagged {
		return prefix + ":" + name, true
	}
	derived = prefix + ":{" + name + "}"
	return derived, !strings.Contains(name, "}")
}

// Slot returns the Redis Cluster hash slot of key (CRC16/XMODEM of the
// effective hash tag, or of the whole key, modulo 16384).
func Slot(key string) uint16 {
	if tag, ok := HashTag(key); ok {
		key = tag
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// Tagged returns name itself when it has an effective hash tag, and "{name}"
// otherwise: a base that hashes like name, to which suffixes can be appended
// (Redisson's read-write lock names its timeout keys "{name}:...").
func Tagged(name string) string {
	if _, tagged := HashTag(name); tagged {
		return name
	}
	return "{" + name + "}"
}
