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
// Until this layout, our keys were Redisson-style, prefix + ":{N}" for an
// untagged name and prefix + ":" + N for a tagged one, so "x" and "{x}" shared
// every key (one fair queue, one semaphore pool). Keys in the old form are not
// read: a rolling deploy mixing versions on one name sees two independent
// sets of queues, pools and tokens, so run one version per name (or drain
// the old one: every such key carries a TTL and vanishes with its users; a
// semaphore's old holders and permits last one lease). Layouts are not
// versioned yet.
//
// # Redisson's names keep Redisson's rule
//
// The rlock channel "redisson_lock__channel" and the rwlock channel
// "redisson_rwlock" are Redisson's, and a Go and a Java client waiting on one
// lock must hear each other, so they follow Redisson's rule:
// prefix + ":{N}" when N has no tag, prefix + ":" + N when it has one (with the
// effective tag in place of Redisson's "contains '{'" shortcut). That rule is
// ambiguous, in Redisson too: "x" and "{x}" get one channel. Sharing a channel
// costs only spurious wake-ups (waiters re-check and wait again); no lock state
// lives in a channel. The rwlock's per-read-hold timeout keys are Redisson's
// too ("{N}:<owner>:rwlock_timeout:<n>", see Tagged), with the same ambiguity;
// there the owner id, unique per handle, keeps two locks apart.
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
	SemHoldersPrefix    = "redisync_sem_holders"
	SemPermitsPrefix    = "redisync_sem_permits"
	SemQueuePrefix      = "redisync_sem_queue"
	SemHeartbeatPrefix  = "redisync_sem_heartbeat"
	SemChannelPrefix    = "redisync_sem_channel"
	RedlockTokenPrefix  = "redisync_redlock_token"
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
	return prefix == LockChannelPrefix || prefix == RWChannelPrefix
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

// Derived returns the key or channel name for prefix and name, in name's
// hash slot. For our prefixes it is prefix + ":{" + H + "}:" + name (see the
// package doc: injective in name); for Redisson's (LockChannelPrefix,
// RWChannelPrefix) it is Redisson's name. ok is false when no name in the
// slot exists: name has no effective hash tag but contains '}' (for example
// "{}" or "x}"). Such names work on a single server but not on a Redis
// Cluster.
func Derived(prefix, name string) (derived string, ok bool) {
	if redisson(prefix) || tagOnly {
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

// redissonDerived is Redisson's prefixName: "prefix:name" when name has a
// tag, "prefix:{name}" otherwise.
func redissonDerived(prefix, name string) (string, bool) {
	if _, tagged := HashTag(name); tagged {
		return prefix + ":" + name, true
	}
	return prefix + ":{" + name + "}", !strings.Contains(name, "}")
}

// Reserved returns why name could alias a key or channel this library
// derives for another name, or "" when it cannot: our own keys all start
// with OwnPrefix, and Redisson's rwlock timeout keys contain RWTimeoutMarker.
// (Redisson's channels live in pub/sub's namespace, not the keyspace.)
func Reserved(name string) string {
	switch {
	case strings.HasPrefix(name, OwnPrefix):
		return "starts with " + OwnPrefix + ", the prefix of redisync's own keys"
	case strings.Contains(name, RWTimeoutMarker):
		return "contains " + RWTimeoutMarker + ", the mark of a read-write lock's read-hold keys"
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

// Tagged returns name itself when it has an effective hash tag, and "{name}"
// otherwise: a base that hashes like name, to which suffixes can be appended
// (Redisson's read-write lock names its timeout keys "{name}:...").
func Tagged(name string) string {
	if _, tagged := HashTag(name); tagged {
		return name
	}
	return "{" + name + "}"
}
