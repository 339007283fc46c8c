// Package keys derives every key and channel name from a lock name, in one place.
//
// Redis Cluster hashes a key by its hash tag when it has one: the part between
// the first '{' and the first '}' after it, if that part is not empty; otherwise
// by the whole key. Every key and channel of one primitive must hash to the slot
// of the primitive's main key (the raw name), so derived names are built from the
// effective hash tag exactly as Redis computes it — not by "contains '{'", which
// is Redisson's shortcut and breaks for names such as "a{b" or "{}".
//
// # Our derived names encode the whole name
//
// A key of ours for name N is
//
//	prefix + ":{" + H + "}:" + N
//
// where H, the slot string, is N's effective hash tag when N has one, N itself
// when N has none and contains no '}', and "" otherwise (such a name hashes as
// a whole string, and no tag could reproduce that: it works on a single server
// only, and CheckName refuses it on a Cluster).
//
// The map N -> key is injective for a fixed prefix, and keys of different
// prefixes never meet: H never contains '}' (a tag ends at the first '}'; the
// whole name is used only when it has none), so in any key the first '}'
// after prefix + ":{" closes H, and N is exactly what follows the "}:" after
// it. The name is read back from the key, so two names cannot share one. The
// prefixes contain neither ':' nor '{', so the prefix is what precedes the
// first ':' and keys of different prefixes differ there. Slot: the key's
// first '{' is the one after the prefix, and H (non-empty, without '}') is its
// tag; H is N's tag or N itself, so key and name hash alike. (FuzzDerived and
// TestDerivedIsInjective check both.)
//
// The layout is versioned (docs/layout.md, layout version 1): a change to
// any key, field or message bumps the version, and a rolling deploy mixes
// only builds of one version (internal/mixedversion runs v0.1.0 against
// HEAD).
//
// # Redisson's names keep Redisson's rule
//
// The rlock channel "redisson_lock__channel", the rwlock channel
// "redisson_rwlock" and the rwlock's read-hold timeout keys
// "<base>:<owner>:rwlock_timeout:<n>" are Redisson's: a Go and a Java client
// on one lock must hear each other's releases and see each other's read
// holds, so these names follow Redisson's own rule, for every name (issue
// 16), even where it is not the effective hash tag:
//
//	channel  prefix + ":" + N       when N contains '{'
//	         prefix + ":{" + N + "}" otherwise
//	base     N                      when N contains '{'   (Tagged)
//	         "{" + N + "}"          otherwise
//
// Where the rule makes names meet: a name N without '{' and the name
// "{" + N + "}" get the same channels and the same read-hold base ("x" and
// "{x}"; also "a}b" and "{a}b}"). In Redisson too. Sharing a channel costs
// only spurious wake-ups (waiters re-check and wait again; no lock state
// lives in a channel), and in a shared read-hold base the owner id, unique
// per handle, keeps two locks' keys apart. No other two names meet.
//
// Where the rule leaves the name's slot: a name that contains '{' but has no
// effective hash tag ("a{b", "{}x", "a{}b") hashes as a whole string, while
// "prefix:a{b" and "a{b:<owner>:rwlock_timeout:1" hash as other whole
// strings, in other slots. On a single server (and Sentinel) that is
// harmless. On a Redis Cluster the scripts that name both would be refused
// (CROSSSLOT), so Derived reports such names not ok for Redisson's prefixes
// and rlock and rwlock refuse them up front with ErrInvalidName (as they do
// names that contain '}' without a tag, for every primitive); Redisson's
// own lock fails on them there too. The other primitives, whose names are
// all ours, accept them.
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
	RWTokenPrefix       = "redisync_rwlock_token"
	// Redisson's RFairLock queue (fairlock.WithRedissonQueue).
	FairRedissonQueuePrefix   = "redisson_lock_queue"
	FairRedissonTimeoutPrefix = "redisson_lock_timeout"
	SemHoldersPrefix          = "redisync_sem_holders"
	SemPermitsPrefix          = "redisync_sem_permits"
	SemQueuePrefix            = "redisync_sem_queue"
	SemHeartbeatPrefix        = "redisync_sem_heartbeat"
	SemChannelPrefix          = "redisync_sem_channel"
	RedlockTokenPrefix        = "redisync_redlock_token"
	// HolderInfoPrefix names the side hash that records who took each hold
	// (host, pid, program, start, label): field = the hold's owner field (a
	// semaphore's permit id), beside the lock and in its slot. It lives and
	// dies with the holds it describes; the lock's own layout is untouched.
	HolderInfoPrefix = "redisync_holder_info"
)

// OwnPrefix starts every key and channel name this library defines (but not
// Redisson's): a lock name starting with it could be one of our keys, so
// Reserved refuses it.
const OwnPrefix = "redisync_"

// RWTimeoutMarker is the part of Redisson's rwlock timeout key names that
// tells them apart: "{N}:<owner>:rwlock_timeout:<n>". A lock name containing
// it could be another lock's read hold.
const RWTimeoutMarker = ":rwlock_timeout:"

// redisson lists the prefixes whose names Redisson defines.
func redisson(prefix string) bool {
	return prefix == LockChannelPrefix || prefix == RWChannelPrefix ||
		prefix == FairRedissonQueuePrefix || prefix == FairRedissonTimeoutPrefix
}

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

// Derived returns the key or channel name for prefix and name. For our
// prefixes it is prefix + ":{" + H + "}:" + name (see the package doc:
// injective in name, in name's slot), and ok is false when no name in the
// slot exists: name has no effective hash tag but contains '}' (for example
// "{}" or "x}"). For Redisson's (LockChannelPrefix, RWChannelPrefix) it is
// Redisson's name, and ok is false when that is not in name's slot: name has
// no effective tag but contains a brace ("a{b", "{}x", "x}"). Names that are
// not ok work on a single server but not on a Redis Cluster.
func Derived(prefix, name string) (derived string, ok bool) {
	if redisson(prefix) {
		return redissonDerived(prefix, name)
	}
	slot, ok := slotString(name)
	return prefix + ":{" + slot + "}:" + name, ok
}

// slotString returns H of the package doc, and false when it is "" because
// the name cannot share a slot with any other key.
func slotString(name string) (string, bool) {
	if tag, tagged := HashTag(name); tagged {
		return tag, true
	}
	if strings.Contains(name, "}") {
		return "", false
	}
	return name, true
}

// redissonDerived is Redisson's prefixName: "prefix:name" when name
// contains '{', "prefix:{name}" otherwise. ok reports whether that is in
// name's slot (see the package doc).
func redissonDerived(prefix, name string) (string, bool) {
	if strings.Contains(name, "{") {
		_, tagged := HashTag(name)
		return prefix + ":" + name, tagged
	}
	return prefix + ":{" + name + "}", !strings.Contains(name, "}")
}

// Reserved returns why name could alias a key or channel this library
// derives for another name, or "" when it cannot: our own keys all start
// with OwnPrefix, Redisson's rwlock timeout keys contain RWTimeoutMarker,
// and Redisson's fair-lock queue keys (fairlock.WithRedissonQueue) start
// with its prefixes and a ':'. (Redisson's channels live in pub/sub's
// namespace, not the keyspace.)
func Reserved(name string) string {
	switch {
	case strings.HasPrefix(name, OwnPrefix):
		return "starts with " + OwnPrefix + ", the prefix of redisync's own keys"
	case strings.Contains(name, RWTimeoutMarker):
		return "contains " + RWTimeoutMarker + ", the mark of a read-write lock's read-hold keys"
	case strings.HasPrefix(name, FairRedissonQueuePrefix+":"), strings.HasPrefix(name, FairRedissonTimeoutPrefix+":"):
		return "starts with the prefix of Redisson's fair-lock queue keys"
	}
	return ""
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

// Tagged returns Redisson's base for keys derived from name by suffix (its
// suffixName; the read-write lock names its timeout keys "<base>:..."):
// name itself when it contains '{', "{name}" otherwise. It hashes like name
// when name has an effective tag or contains neither brace (see the package
// doc).
func Tagged(name string) string {
	if _, tagged := HashTag(name); tagged || strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}
