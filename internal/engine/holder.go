package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/scripts"
)

// HolderInfo returns the holder-info hash of the lock named name (in its
// slot; see keys.HolderInfoPrefix) and what this Client's acquires record
// there, or "", "" when it records nothing: its scripts are then given no
// such key at all, so a user whose ACL does not cover it can still lock
// (Redis refuses a script whose KEYS the user may not touch).
func (e *Engine) HolderInfo(name string) (key, value string) {
	if e.Config.HolderInfo == "" {
		return "", ""
	}
	key, _ = keys.Derived(keys.HolderInfoPrefix, name)
	return key, e.Config.HolderInfo
}

// HolderInfoKey is the holder-info hash of name, whether or not this Client
// records (readers).
func (e *Engine) HolderInfoKey(name string) string {
	key, _ := keys.Derived(keys.HolderInfoPrefix, name)
	return key
}

// WithInfoKey runs f with the holder-info key of name (force-unlocks delete
// it, a semaphore's Holders reads it, also when this Client records
// nothing), and once more without it ("") when Redis refused the script
// because the user's ACL does not cover that key (Redis refuses a script
// whose KEYS the user may not touch): a user who may handle the lock but
// not the side key still force-unlocks and reads holders; the records then
// expire with their leases.
func WithInfoKey[T any](e *Engine, name string, f func(info string) (T, error)) (T, error) {
	v, err := f(e.HolderInfoKey(name))
	if err != nil && keysDenied(err) {
		return f("")
	}
	return v, err
}

// keysDenied reports whether err is Redis's refusal of a command whose keys
// the user's ACL does not cover.
func keysDenied(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOPERM") && strings.Contains(re.Error(), "keys")
}

// LockHolder is one owner of a lock hash as LockState.Holders reads it.
type LockHolder struct {
	Owner string
	Count int
	TTL   time.Duration // the hash's remaining lease (every holder shares it)
	Info  string        // the owner's holder-info record, "" for none
}

// Lock hash shapes, as keyspace.lua's lock_shape and lock_fields tell them
// apart: what a reader of rlock, fairlock or rwlock finds under a name.
const (
	ShapeNone   = "none"   // no key
	ShapeLock   = "lock"   // Redisson's RLock layout (rlock, fairlock)
	ShapeRWLock = "rwlock" // Redisson's RReadWriteLock layout
)

// LockState is one read of the lock hash at a name.
type LockState struct {
	Shape   string            // ShapeNone, ShapeLock or ShapeRWLock
	TTL     time.Duration     // the hash's remaining lease; -1 for none
	Fields  map[string]string // the hash
	Records map[string]string // the holder-info hash (ReadLock with records)
}

// ReadLockAs is ReadLock for an rlock or fairlock handle: anything under
// name that is not a plain lock hash (nor free) is an error, and every error
// names primitive and name.
func (e *Engine) ReadLockAs(ctx context.Context, primitive, name string, records bool) (LockState, error) {
	st, err := e.ReadLock(ctx, name, records)
	if err == nil {
		err = st.ExpectShape(name, ShapeLock)
	}
	if err != nil {
		return LockState{}, fmt.Errorf("%s %q: %w", primitive, name, err)
	}
	return st, nil
}

// ReadLock reads the lock hash name and says what it is: its type, TTL and
// fields in one read-only script (lock_read.lua, sent as EVALSHA_RO: Redis
// runs it under out of memory, where it refuses every command queued in a
// MULTI, and for a user with read-only key access; a replicated Client
// sends no WAIT after it); with records, the holder-info hash in a second
// round trip, so a user whose ACL does not cover the side key still reads
// the lock. Anything that is no lock hash — another type, a hash without
// expiry (a user's, a semaphore's configuration), a mode that is neither
// read nor write, a field that holds no count — is a *errs.WrongKindError
// naming name and what is there, never a Redis WRONGTYPE error and never
// holders.
func (e *Engine) ReadLock(ctx context.Context, name string, records bool) (LockState, error) {
	typ, pttl, fields, err := scripts.LockRead(ctx, e.RC, name)
	if err != nil {
		return LockState{}, err
	}
	st := LockState{Shape: ShapeNone}
	switch typ {
	case "none":
		return st, nil
	case "hash":
	default:
		return st, &errs.WrongKindError{Key: name, Found: "a " + typ}
	}
	st.Fields = fields
	if found := LockShape(st.Fields, pttl); found != "" {
		return st, &errs.WrongKindError{Key: name, Found: found}
	}
	st.Shape, st.TTL = ShapeLock, time.Duration(pttl)*time.Millisecond
	if _, ok := st.Fields["mode"]; ok {
		st.Shape = ShapeRWLock
	}
	if records {
		rec := e.RC.Do(ctx, e.RC.B().Hgetall().Key(e.HolderInfoKey(name)).Build())
		st.Records, _ = rec.AsStrMap() // none: not a hash, absent, or denied
	}
	return st, nil
}

// LockShape says what the hash fields with PTTL pttl is when it is no lock
// hash (keyspace.lua's lock_shape and lock_fields), "" when it is one. The
// command's inspect recognises lock hashes with it too.
func LockShape(fields map[string]string, pttl int64) string {
	if pttl < 0 {
		if _, ok := fields["capacity"]; ok {
			return "a semaphore's configuration"
		}
		return "a hash without expiry"
	}
	if m, ok := fields["mode"]; ok && m != "read" && m != "write" {
		return "a hash whose mode is neither read nor write"
	}
	for f, v := range fields {
		if f != "mode" && !strings.HasPrefix(f, "redisync:") && !IsCount(v) {
			return "a hash with fields no lock has"
		}
	}
	return ""
}

// IsCount reports whether v is a hold count: a positive decimal integer.
func IsCount(v string) bool {
	if v == "" || v[0] == '0' {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ExpectShape is nil when st is of shape want (or none), else the
// *errs.WrongKindError naming name and the other kind of lock there.
func (st *LockState) ExpectShape(name, want string) error {
	if st.Shape == ShapeNone || st.Shape == want {
		return nil
	}
	if st.Shape == ShapeRWLock {
		return &errs.WrongKindError{Key: name, Found: "a read-write lock"}
	}
	return &errs.WrongKindError{Key: name, Found: "a lock that is no read-write lock"}
}

// Count is the hold count in field (0 when absent).
func (st *LockState) Count(field string) int {
	n, _ := strconv.Atoi(st.Fields[field])
	return n
}

// Holders are st's holders: every field holding a hold count (fields of
// ours, "redisync:...", and the rwlock's "mode" are none), each with its
// record from the holder-info hash (a grant on a free lock deletes every
// earlier record, so a record is the current hold's; records of owners that
// hold nothing, a hold that expired, are not shown), ordered by owner.
func (st *LockState) Holders() []LockHolder {
	var out []LockHolder
	for f, v := range st.Fields {
		if f == "mode" || strings.HasPrefix(f, "redisync:") {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			continue
		}
		out = append(out, LockHolder{Owner: f, Count: n, TTL: st.TTL, Info: st.Records[f]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner < out[j].Owner })
	return out
}
