package keys

import "strings"

// Fields the lock scripts keep in a lock's hash beside its owners' fields
// (internal/scripts: lib.lua, keyspace.lua, rwlock_*.lua). An owner id is a
// field of that hash too, so it must never be one of these.
const (
	// OwnFieldPrefix starts every field of ours: "redisync:token" (the
	// fencing token of an rlock or fair lock), "redisync:latch:<handle>"
	// (a shared owner's handle's last request). Scripts skip such fields
	// when they count holds.
	OwnFieldPrefix = "redisync:"
	// ModeField is Redisson's read-write lock marker, "read" or "write":
	// a hash with it is a read-write lock, one with another value no lock.
	ModeField = "mode"
	// WriteFieldSuffix ends a read-write lock's write fields,
	// "<owner>:write"; a read field is the bare "<owner>", and scripts tell
	// the two apart by this suffix.
	WriteFieldSuffix = ":write"
)

// ReservedOwner returns why id cannot be an owner id, or "" when it can.
// For every lock kind an owner id is a field of the lock's hash, which must
// not be a field the scripts keep there (OwnFieldPrefix, ModeField) nor a
// read-write lock's write field (WriteFieldSuffix).
//
// A read-write lock (rw) also names a key per read hold,
// "<base>:<owner>:rwlock_timeout:<n>" (Redisson's layout; base is Tagged(name)),
// and names may contain ':', so an owner id with colons could make two
// locks' read holds one key: "{t}" read by "u:7" and "{t}:u" read by "7" meet
// at "{t}:u:7:rwlock_timeout:1". Its owner ids therefore have one of two
// shapes: one part without ':' that is not all digits ("job-7"), or a part
// without ':' and a number, "<part>:<digits>" — Redisson's
// "<client uuid>:<thread id>", and this library's drawn "<client id>:<n>".
// Then the key's last colon-separated parts before ":rwlock_timeout:" say
// where the owner starts, so no two (name base, owner) pairs share a key.
func ReservedOwner(id string, rw bool) string {
	switch {
	case id == "":
		return "the owner id is empty"
	case strings.HasPrefix(id, OwnFieldPrefix):
		return `it starts with "` + OwnFieldPrefix + `", the prefix of the fields a lock keeps beside its owners' (its fencing token, its handles' latches)`
	case id == ModeField:
		return `it is "` + ModeField + `", the read-write lock's marker field`
	case strings.HasSuffix(id, WriteFieldSuffix):
		return `it ends with "` + WriteFieldSuffix + `", the mark of a read-write lock's write fields`
	}
	if !rw {
		return ""
	}
	part, num, two := strings.Cut(id, ":")
	switch {
	case !two && digits(id):
		return "a read-write lock's owner id of one part must not be all digits: its read-hold keys could be another lock's (use \"<part>:<number>\", or a part with a non-digit)"
	case two && (part == "" || !digits(num)):
		return "a read-write lock's owner id with a ':' must be \"<part>:<number>\" (Redisson's \"<uuid>:<thread id>\"): its read-hold keys could be another lock's"
	}
	return ""
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
