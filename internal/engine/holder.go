package engine

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keys"
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

// LockHolder is one owner of a lock hash as LockHolders reads it.
type LockHolder struct {
	Owner string
	Count int
	TTL   time.Duration // the hash's remaining lease (every holder shares it)
	Info  string        // the owner's holder-info record, "" for none
}

// LockHolders reads the holders of the lock hash name (the rlock and
// fairlock layout, Redisson's): every field holding a hold count, the
// hash's TTL, and each holder's record from the holder-info hash, in one
// round trip. (A record is paired with an owner field by name; a grant on a
// free lock deletes every earlier record, so a record is the current hold's.) Fields of ours
// ("redisync:...") and the rwlock's "mode" are no holders; records of
// owners that hold nothing (a hold that expired) are not shown. A key of
// another type is a *errs.WrongKindError.
func (e *Engine) LockHolders(ctx context.Context, name string) ([]LockHolder, error) {
	info := e.HolderInfoKey(name)
	b := e.RC.B()
	// The lock's three reads in one MULTI; the records after it, in the
	// same round trip but outside: a user whose ACL does not cover the
	// side key still sees the holders (without records).
	res := e.RC.DoMulti(ctx, b.Multi().Build(),
		b.Type().Key(name).Build(), b.Pttl().Key(name).Build(), b.Hgetall().Key(name).Build(),
		b.Exec().Build(), b.Hgetall().Key(info).Build())
	vals, err := res[4].ToArray()
	if err != nil {
		return nil, err
	}
	if len(vals) != 3 {
		return nil, fmt.Errorf("redisync: unexpected reply of %d values reading %q's holders", len(vals), name)
	}
	typ, _ := vals[0].ToString()
	switch typ {
	case "none":
		return nil, nil
	case "hash":
	default:
		return nil, &errs.WrongKindError{Key: name, Found: "a " + typ}
	}
	pttl, err := vals[1].AsInt64()
	if err != nil {
		return nil, err
	}
	fields, err := vals[2].AsStrMap()
	if err != nil {
		return nil, err
	}
	records, _ := res[5].AsStrMap() // none: not a hash, absent, or denied
	ttl := time.Duration(pttl) * time.Millisecond
	if pttl < 0 {
		ttl = -1
	}
	var out []LockHolder
	for f, v := range fields {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || f == "mode" || strings.HasPrefix(f, "redisync:") {
			continue
		}
		out = append(out, LockHolder{Owner: f, Count: n, TTL: ttl, Info: records[f]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner < out[j].Owner })
	return out, nil
}
