package keyspace

import (
	"errors"
	"strings"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
)

// dataTypes plants a user's value of each Redis type (the last: none).
var dataTypes = [][]string{
	{"SET", "", "v"},
	{"RPUSH", "", "a", "b"},
	{"SADD", "", "a", "b"},
	{"ZADD", "", "1", "a"},
	{"HSET", "", "name", "Ann", "email", "ann@example.com"},
	{"XADD", "", "*", "f", "v"},
	nil,
}

// maxFuzzName bounds the names tried (longer ones add nothing but time).
const maxFuzzName = 64

// FuzzKeyspace drives two handles — names a and b, kinds ka and kb — through
// try, inspect, release and force on one server, with a user's value of one
// Redis type (with or without expiry) planted at one of the keys either
// handle may touch, and checks issue 13's properties:
//
//   - no Lua or type error: every answer is a grant, busy, ErrWrongKind or
//     ErrInvalidName;
//   - distinct names never interfere: b alone on its keys is granted
//     whatever a does (the names Redisson defines — the rlock and rwlock
//     channels, the rwlock read-hold keys' "{name}" base — may coincide for
//     "x" and "{x}"; channels carry only wake-up hints and the read-hold
//     keys include the owner, so nothing here depends on them);
//   - the same name excludes (only read holds share) or refuses;
//   - the planted value comes out byte-identical (DUMP) with the same
//     absolute expiry;
//   - afterwards no key is left without expiry except the planted one and a
//     semaphore's configuration hash (documented: it is the configuration).
func FuzzKeyspace(f *testing.F) {
	for _, s := range []struct {
		a, b         string
		ka, kb, data uint8
		at           uint8
		ttl          bool
	}{
		{"x", "{x}", uint8(kFair), uint8(kFair), 6, 0, false},
		{"y", "{y}", uint8(kSem), uint8(kSem), 6, 0, false},
		{"orders:42", "orders:42", uint8(kRead), uint8(kWrite), 4, 0, false},
		{"orders:42", "orders:42", uint8(kWrite), uint8(kRLock), 4, 0, true},
		{"s", "s", uint8(kSem), uint8(kRLock), 6, 0, false},
		{"x", "x", uint8(kRLock), uint8(kRead), 6, 0, false},
		{"redisync_sem_permits:{s}", "s", uint8(kRLock), uint8(kSem), 6, 0, false},
		{"x", "redisync_lock_token:{x}", uint8(kRLock), uint8(kRLock), 0, 1, false},
		{"a}b", "{}", uint8(kFair), uint8(kRedlock), 1, 2, true},
		{"{a{}:b", "a{", uint8(kSem), uint8(kWrite), 3, 3, false},
		{"k", "k", uint8(kRedlock), uint8(kFair), 5, 0, false},
	} {
		f.Add(s.a, s.b, s.ka, s.kb, s.data, s.at, s.ttl)
	}
	e := newEnv(f)
	other := redisync.New(dial(f))
	f.Cleanup(func() { other.Close() })
	f.Fuzz(func(t *testing.T, a, b string, ka, kb, data, at uint8, ttl bool) {
		if a == "" || b == "" || len(a) > maxFuzzName || len(b) > maxFuzzName {
			t.Skip()
		}
		e.do(t, "FLUSHALL")
		ha := newHandle(e.c, kind(ka%uint8(nKinds)), a)
		hb := newHandle(other, kind(kb%uint8(nKinds)), b)

		// Plant the user's value at one key either handle may touch.
		touched := append(append([]string{}, ha.keys...), hb.keys...)
		planted := touched[int(at)%len(touched)]
		cmd := dataTypes[int(data)%len(dataTypes)]
		if cmd != nil && ttl && typeOf(cmd) == ourType(planted) {
			// Documented exemption: a key in our namespace ("redisync_"
			// names no lock may take) of our type and with an expiry, as
			// all of ours have, is taken as ours.
			t.Skip()
		}
		if cmd != nil {
			args := append([]string{cmd[0], planted}, cmd[2:]...)
			e.do(t, args...)
			if ttl {
				e.do(t, "PEXPIRE", planted, "600000")
			}
		} else {
			planted = ""
		}
		var want keyState
		if planted != "" {
			want = e.state(t, planted)
		}
		answer := func(what string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, errWrongKind) && !errors.Is(err, redisync.ErrInvalidName) {
				t.Fatalf("%s: %v (planted %q)%s", what, err, planted, e.describe(t))
			}
		}

		okA, err := ha.try(bg())
		answer("a try", err)
		okB, err := hb.try(bg())
		answer("b try", err)
		switch {
		case a != b:
			// b alone: granted unless its name is refused or it meets the
			// planted value on a key of its own.
			mine := planted != "" && contains(hb.keys, planted)
			if !okB && !mine && !errors.Is(err, redisync.ErrInvalidName) {
				t.Fatalf("distinct names interfere: %v %q then %v %q: b got %v, %v%s", ha.kind, a, hb.kind, b, okB, err, e.describe(t))
			}
		case okA && okB && !shares(ha.kind, hb.kind):
			t.Fatalf("one name, both held: %v and %v on %q%s", ha.kind, hb.kind, a, e.describe(t))
		}
		// Inspection answers what is no lock of its kind with the typed
		// wrong-kind error too, never Redis's raw WRONGTYPE.
		answer("a inspect", ha.inspect(bg()))
		answer("b inspect", hb.inspect(bg()))
		if okB {
			if err := hb.release(bg()); err != nil {
				t.Fatalf("b release: %v%s", err, e.describe(t))
			}
		}
		if okA {
			if err := ha.release(bg()); err != nil {
				t.Fatalf("a release: %v%s", err, e.describe(t))
			}
		}
		for _, h := range []*handle{ha, hb} {
			if h.force != nil {
				answer(h.kind.String()+" force", h.force(bg()))
			}
		}
		if planted != "" {
			if got := e.state(t, planted); got != want {
				t.Fatalf("the user's value at %q changed: %+v -> %+v%s", planted, want, got, e.describe(t))
			}
		}
		keys, err := e.do(t, "KEYS", "*").AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k == planted || (k == a && ha.kind == kSem) || (k == b && hb.kind == kSem) {
				continue
			}
			if pttl, _ := e.do(t, "PTTL", k).AsInt64(); pttl == -1 {
				t.Fatalf("key %q left without expiry%s", k, e.describe(t))
			}
		}
	})
}

// typeOf is the Redis type a dataTypes command creates.
func typeOf(cmd []string) string {
	return map[string]string{"SET": "string", "RPUSH": "list", "SADD": "set", "ZADD": "zset", "HSET": "hash", "XADD": "stream"}[cmd[0]]
}

// ourType is the type of our derived key k ("" for a lock's own key).
func ourType(k string) string {
	for prefix, typ := range map[string]string{
		keys.FairQueuePrefix: "zset", keys.FairHeartbeatPrefix: "zset", keys.RWWritersPrefix: "zset",
		keys.SemHoldersPrefix: "zset", keys.SemQueuePrefix: "zset", keys.SemHeartbeatPrefix: "zset",
		keys.SemPermitsPrefix: "hash", keys.LockTokenPrefix: "string", keys.RedlockTokenPrefix: "string",
		keys.HolderInfoPrefix: "hash", keys.RWTokenPrefix: "string",
	} {
		if strings.HasPrefix(k, prefix+":") {
			return typ
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
