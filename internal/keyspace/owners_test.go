package keyspace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// ownerKind is a kind whose handles take an owner id (WithOwner), with the
// fair lock's two queues.
type ownerKind struct {
	k        kind
	redisson bool
}

func (l ownerKind) String() string {
	if l.redisson {
		return l.k.String() + "(redisson queue)"
	}
	return l.k.String()
}

var ownerKinds = []ownerKind{{kRLock, false}, {kFair, false}, {kFair, true}, {kRead, false}, {kWrite, false}}

// ownerRefused reports whether err refuses an owner id, and fails the test
// when it does so without saying which option and why.
func ownerRefused(t *testing.T, err error, owner string) bool {
	t.Helper()
	if !errors.Is(err, errInvalidOwner) {
		return false
	}
	assert.Contains(t, err.Error(), "WithOwner", "the error names the option")
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", owner), "the error names the owner id")
	return true
}

// Issue 22, defects 1 and 2: an owner id equal to a field the scripts keep
// beside the owners' fields — "redisync:token" (rlock, fairlock: the
// fencing token), "mode" (the read-write lock's marker) — got in beside
// another owner and rewrote its token, broke the lock for every kind
// (a raw Lua error, then ErrWrongKind until someone DELs it), or left the
// hash behind its Unlock. Such an id is refused before any I/O with
// ErrInvalidOwner, or the lock behaves: exclusion against another owner,
// Unlock releases, nothing left behind.
func TestOwnerIDsOfOurFieldsNeitherShareNorBreakALock(t *testing.T) {
	e := newEnv(t)
	other := redisync.New(dial(t))
	t.Cleanup(func() { other.Close() })
	owners := []string{"redisync:token", "redisync:latch:1", "redisync:", "mode", "x:write", "mode:write"}
	for _, lk := range ownerKinds {
		for _, owner := range owners {
			what := fmt.Sprintf("%v WithOwner(%q)", lk, owner)
			e.do(t, "FLUSHALL")
			name := "orders:42"
			theirs := newHandleWith(other, lk.k, name, spec{redisson: lk.redisson})
			ours := newHandleWith(e.c, lk.k, name, spec{owner: owner, redisson: lk.redisson})

			// Beside another owner's hold: busy (a reader beside a
			// reader: granted, its own hold) or refused.
			ok, err := theirs.try(bg())
			require.True(t, ok && err == nil, "%s: the other owner alone: %v, %v", what, ok, err)
			before := e.snapshot(t)
			ok, err = ours.try(bg())
			switch {
			case ownerRefused(t, err, owner):
				assert.Empty(t, diff(before, e.snapshot(t)), "%s: a refused id wrote", what)
				continue
			case err != nil:
				t.Errorf("%s beside another owner: %v%s", what, err, e.describe(t))
			case ok && !shares(lk.k, lk.k):
				t.Errorf("%s: granted while another owner holds%s", what, e.describe(t))
			case !ok:
				assert.Empty(t, diff(before, e.snapshot(t)), "%s: a busy attempt wrote", what)
			}
			if ok {
				assert.NoError(t, ours.release(bg()), "%s: release beside the other owner", what)
			}
			assert.NoError(t, theirs.release(bg()), "%s: the other owner's release", what)

			// Alone: granted; others are busy, not told the name holds
			// something else; its release frees the name.
			ok, err = ours.try(bg())
			if !assert.True(t, ok && err == nil, "%s alone: %v, %v%s", what, ok, err, e.describe(t)) {
				continue
			}
			ok, err = theirs.try(bg())
			if shares(lk.k, lk.k) {
				assert.True(t, ok && err == nil, "%s: a reader beside it: %v, %v", what, ok, err)
				if ok {
					assert.NoError(t, theirs.release(bg()), what)
				}
			} else {
				assert.True(t, !ok && err == nil, "%s: another owner beside it must be busy: %v, %v", what, ok, err)
			}
			assert.NoError(t, ours.release(bg()), "%s: its own release", what)
			n, err := e.do(t, "EXISTS", name).AsInt64()
			require.NoError(t, err)
			assert.Zero(t, n, "%s: the lock is left after its release%s", what, e.describe(t))
			for k := range nKinds {
				h := newHandle(other, k, name)
				ok, err := h.try(bg())
				if assert.True(t, ok && err == nil, "%s: then %v on the name: %v, %v%s", what, k, ok, err, e.describe(t)) {
					assert.NoError(t, h.release(bg()), "%s: then %v", what, k)
				}
				if k == kSem {
					e.do(t, "DEL", name) // its configuration stays
				}
			}
		}
	}
}

// A read-write lock keeps one key per read hold, "<base>:<owner>:rwlock_timeout:<n>",
// base "{name}" or a name with a brace: owner ids with colons could make two
// locks' read holds one key ("{t}" read by "u:7" and "{t}:u" read by "7"), and
// one's release then took the other's read hold. Every read hold keeps its own
// key, or the owner id is refused.
func TestRWLockReadHoldsOfTwoLocksNeverShareAKey(t *testing.T) {
	e := newEnv(t)
	other := redisync.New(dial(t))
	t.Cleanup(func() { other.Close() })
	for _, pair := range [][4]string{
		{"{t}", "u:7", "{t}:u", "7"},
		{"{t}", "a:b:c", "{t}:a", "b:c"},
		{"{t}x", "y:rwlock_timeout:1", "{t}x:y", "rwlock_timeout:1"},
		{"{t}", "u:7", "{t}:u", "v:7"}, // both taken: their keys differ
	} {
		e.do(t, "FLUSHALL")
		a := newHandleWith(e.c, kRead, pair[0], spec{owner: pair[1]})
		b := newHandleWith(other, kRead, pair[2], spec{owner: pair[3]})
		okA, errA := a.try(bg())
		okB, errB := b.try(bg())
		if ownerRefused(t, errA, pair[1]) || ownerRefused(t, errB, pair[3]) {
			continue
		}
		require.True(t, okA && errA == nil && okB && errB == nil, "%v: %v, %v; %v, %v", pair, okA, errA, okB, errB)
		bKey := b.keys[4] // its read hold's key (kinds_test.go)
		require.NoError(t, a.release(bg()))
		n, err := e.do(t, "EXISTS", bKey).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "%v: %q's release took %q's read hold %q%s", pair, pair[0], pair[2], bKey, e.describe(t))
		assert.NoError(t, b.release(bg()))
	}
}

// commandsProcessed is the server's count of commands run so far.
func (e *env) commandsProcessed(t *testing.T) int64 {
	t.Helper()
	info, err := e.do(t, "INFO", "stats").ToString()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO stats has no total_commands_processed")
	return 0
}

// A refused owner id is refused by every method of the handle, with an
// error that names the package, the option, the id and why, before
// anything is sent to Redis.
func TestInvalidOwnerIsRefusedBeforeAnyIO(t *testing.T) {
	e := newEnv(t)
	for _, lk := range ownerKinds {
		for _, owner := range []string{"redisync:token", "mode", "x:write"} {
			what := fmt.Sprintf("%v WithOwner(%q)", lk, owner)
			h := newHandleWith(e.c, lk.k, "orders:42", spec{owner: owner, redisson: lk.redisson})
			before := e.commandsProcessed(t)
			ok, err := h.try(bg())
			assert.False(t, ok, what)
			var ie *redisync.InvalidOwnerError
			if assert.ErrorAs(t, err, &ie, what) {
				assert.Equal(t, "WithOwner", ie.Option, what)
				assert.Equal(t, owner, ie.Owner, what)
				assert.NotEmpty(t, ie.Reason, what)
				assert.Equal(t, "orders:42", ie.Name, what)
				assert.Contains(t, err.Error(), ie.Package+` "orders:42": WithOwner(`, what)
			}
			assert.ErrorIs(t, err, redisync.ErrInvalidOwner, what)
			assert.ErrorIs(t, h.release(bg()), redisync.ErrInvalidOwner, what)
			assert.ErrorIs(t, h.inspect(bg()), redisync.ErrInvalidOwner, what)
			_, err = h.holders(bg())
			assert.ErrorIs(t, err, redisync.ErrInvalidOwner, what)
			// One command since: the INFO that read the count.
			assert.Equal(t, before+1, e.commandsProcessed(t), "%s: commands were sent", what)
		}
	}
	before := e.commandsProcessed(t)
	for _, owner := range []string{"", "7"} {
		rw := rwlock.New(e.c, "orders:42", rwlock.WithOwner(owner))
		assert.ErrorIs(t, rw.RLock(bg()), redisync.ErrInvalidOwner, "rwlock WithOwner(%q)", owner)
		assert.ErrorIs(t, rw.Lock(bg()), redisync.ErrInvalidOwner, "rwlock WithOwner(%q)", owner)
	}
	assert.ErrorIs(t, rlock.New(e.c, "orders:42", rlock.WithOwner("")).Lock(bg()), redisync.ErrInvalidOwner)
	assert.Equal(t, before+1, e.commandsProcessed(t), "commands were sent")
	assert.NoError(t, rlock.New(e.c, "orders:42", rlock.WithOwner("7")).Lock(bg()), "an rlock's owner of digits")

	// A multilock with a component whose owner id is refused: refused, and
	// nothing of its other components is left held.
	e.do(t, "FLUSHALL")
	m := multilock.New(rlock.New(e.c, "a"), rlock.New(e.c, "b", rlock.WithOwner("mode")), fairlock.New(e.c, "c"))
	assert.ErrorIs(t, m.Lock(bg()), redisync.ErrInvalidOwner, "multilock")
	ok, err := m.TryLock(bg())
	assert.False(t, ok)
	assert.ErrorIs(t, err, redisync.ErrInvalidOwner, "multilock")
	for _, name := range []string{"a", "b", "c"} {
		n, err := e.do(t, "EXISTS", name).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "multilock component %q left held%s", name, e.describe(t))
	}
}

// An owner id is capped as a name is (MaxOwnerLength, the same 4096
// bytes): it is sent with every command, is a field of the lock's hash,
// part of every fair waiter's channel and every read hold's key. A longer
// one — an id built from a request body — is refused by every method
// before any I/O, with an error that quotes only its start; one of
// exactly MaxOwnerLength bytes is granted.
func TestOwnerIDLongerThanMaxOwnerLengthIsRefusedBeforeAnyIO(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, rlock.MaxNameLength, rlock.MaxOwnerLength)
	require.Equal(t, rlock.MaxOwnerLength, fairlock.MaxOwnerLength)
	require.Equal(t, rlock.MaxOwnerLength, rwlock.MaxOwnerLength)
	for _, lk := range ownerKinds {
		for _, n := range []int{rlock.MaxOwnerLength + 1, 1 << 20} {
			owner := strings.Repeat("o", n)
			what := fmt.Sprintf("%v WithOwner(%d bytes)", lk, n)
			h := newHandleWith(e.c, lk.k, "orders:42", spec{owner: owner, redisson: lk.redisson})
			before := e.commandsProcessed(t)
			ok, err := h.try(bg())
			assert.False(t, ok, what)
			var ie *redisync.InvalidOwnerError
			if assert.ErrorAs(t, err, &ie, what) {
				assert.Equal(t, owner, ie.Owner, what)
				assert.Contains(t, ie.Reason, "MaxOwnerLength", what)
				assert.Less(t, len(err.Error()), 512, "%s: the message quotes the whole id", what)
				assert.Contains(t, err.Error(), fmt.Sprintf("(%d bytes)", n), what)
			}
			assert.ErrorIs(t, h.release(bg()), redisync.ErrInvalidOwner, what)
			assert.ErrorIs(t, h.inspect(bg()), redisync.ErrInvalidOwner, what)
			// One command since: the INFO that read the count.
			assert.Equal(t, before+1, e.commandsProcessed(t), "%s: commands were sent", what)
		}
		e.do(t, "FLUSHALL")
		owner := strings.Repeat("o", rlock.MaxOwnerLength)
		h := newHandleWith(e.c, lk.k, "orders:42", spec{owner: owner, redisson: lk.redisson})
		ok, err := h.try(bg())
		require.NoError(t, err, "%v WithOwner(MaxOwnerLength bytes)", lk)
		assert.True(t, ok, "%v WithOwner(MaxOwnerLength bytes)", lk)
		assert.NoError(t, h.release(bg()), lk.String())
	}
}

// Owner ids of Redisson's shape, "<client uuid>:<thread id>", and plain ones
// are taken as they are, by every kind: the hash field is the id itself, so
// a Redisson client with that id is the same owner.
func TestRedissonOwnerIDsAreTakenAsTheyAre(t *testing.T) {
	e := newEnv(t)
	other := redisync.New(dial(t))
	t.Cleanup(func() { other.Close() })
	for _, lk := range ownerKinds {
		for _, owner := range []string{"550e8400-e29b-41d4-a716-446655440000:1", "job-7", "job:7"} {
			what := fmt.Sprintf("%v WithOwner(%q)", lk, owner)
			e.do(t, "FLUSHALL")
			h := newHandleWith(e.c, lk.k, "orders:42", spec{owner: owner, redisson: lk.redisson})
			ok, err := h.try(bg())
			require.True(t, ok && err == nil, "%s: %v, %v", what, ok, err)
			field := owner
			if lk.k == kWrite {
				field += ":write"
			}
			n, err := e.do(t, "HGET", "orders:42", field).AsInt64()
			assert.NoError(t, err, what)
			assert.Equal(t, int64(1), n, "%s: the hold count under the id as given", what)
			theirs := newHandleWith(other, lk.k, "orders:42", spec{redisson: lk.redisson})
			ok, err = theirs.try(bg())
			if shares(lk.k, lk.k) {
				assert.True(t, ok && err == nil, what)
				if ok {
					assert.NoError(t, theirs.release(bg()), what)
				}
			} else {
				assert.True(t, !ok && err == nil, "%s: another owner is busy: %v, %v", what, ok, err)
			}
			assert.NoError(t, h.release(bg()), what)
			exists, err := e.do(t, "EXISTS", "orders:42").AsInt64()
			require.NoError(t, err)
			assert.Zero(t, exists, what)
		}
	}
}

// Redisson's fair-lock queue keys carry no expiry and no mark (as in
// Redisson): a lock named like one, "redisson_lock_queue:{x}", held its
// hash there, and fair lock x with WithRedissonQueue could no longer be
// released (ErrWrongKind at its Unlock). Such names are refused.
func TestNamesOfRedissonQueueKeysAreRefused(t *testing.T) {
	e := newEnv(t)
	fair := newHandleWith(e.c, kFair, "x", spec{redisson: true})
	ok, err := fair.try(bg())
	require.True(t, ok && err == nil, "%v, %v", ok, err)
	var granted []*handle
	for _, name := range []string{derived(keys.FairRedissonQueuePrefix, "x"), derived(keys.FairRedissonTimeoutPrefix, "x")} {
		h := newHandle(e.c, kRLock, name)
		ok, err := h.try(bg())
		assert.ErrorIs(t, err, redisync.ErrInvalidName, "%q", name)
		if ok {
			granted = append(granted, h)
		}
		for k := range nKinds {
			_, err := newHandle(e.c, k, name).try(bg())
			assert.ErrorIs(t, err, redisync.ErrInvalidName, "%v %q", k, name)
		}
	}
	assert.NoError(t, fair.release(bg()), "fair lock x's release")
	for _, h := range granted {
		_ = h.release(bg())
	}
}
