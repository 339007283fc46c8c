package keyspace

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/scripts"
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

// FuzzKeyspace drives two handles — names a and b (b "": a's), kinds ka
// and kb, owner ids oa and ob (WithOwner, for the lock kinds; "": drawn;
// see fuzzOwner), a's Client with holder label label, and bit i of flags
// making handle i's fair lock wait in Redisson's queue — through try,
// inspect, release and force on one server, with a user's value of one
// Redis type (with or without expiry) planted at one of the keys either
// handle may touch, and checks issue 13's and 22's properties, once on
// Clients that record holder info and once on Clients that record none
// (whose scripts take their common paths: a free name, the release of a
// hold's last count; the label is then not recorded):
//
//   - no Lua or type error: every answer is a grant, busy, ErrWrongKind,
//     ErrInvalidName, or ErrInvalidOwner for a handle given an owner id —
//     refused before any I/O (nothing changed in Redis);
//   - a label is recorded exactly as given (Holders), or refused by
//     CheckLabel, and then by New with a panic;
//   - distinct names never interfere: b alone on its keys is granted
//     whatever a does (the names Redisson defines — the rlock and rwlock
//     channels, the rwlock read-hold keys' "{name}" base — may coincide for
//     "x" and "{x}"; channels carry only wake-up hints and the read-hold
//     keys include the owner, so nothing here depends on them);
//   - the same name excludes (only read holds share) or refuses; among the
//     kinds that share the lock hash (rlock, fairlock, rwlock), another
//     owner's hold is busy, never "something else" (an owner id must not
//     make a lock look like no lock);
//   - a release of a lock kind's hold frees its name: the hash is gone;
//   - a's release changes no key of b's hold on another name;
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
		f.Add(s.a, s.b, s.ka, s.kb, s.data, s.at, s.ttl, "", "", "", uint8(0))
	}
	// Every pair of kinds on one name, a's owner id drawn or shared (a
	// latch: the acquire's rare path), both fair locks in our queue or in
	// Redisson's.
	for ka := range nKinds {
		for kb := range nKinds {
			for _, oa := range []string{"", "svc"} {
				f.Add("m", "", uint8(ka), uint8(kb), uint8(len(dataTypes)-1), uint8(0), false, oa, "", "", uint8(0))
				if ka == kFair || kb == kFair {
					f.Add("m", "", uint8(ka), uint8(kb), uint8(len(dataTypes)-1), uint8(0), false, oa, "", "", uint8(3))
				}
			}
		}
	}
	// Owner ids and labels (issue 22) have their seeds in testdata, named
	// after what each catches: issue22-defect1-* (an owner id "redisync:token"
	// beside another owner), issue22-defect2-* ("mode"), the read-write
	// lock's write field, read-hold keys and (found by the fuzzer with the
	// check reverted) a latch field as a reader, and a label that is not
	// UTF-8.
	e := newEnv(f)
	other := redisync.New(dial(f))
	bare, bareOther := redisync.New(dial(f), redisync.WithHolderInfo(false)), redisync.New(dial(f), redisync.WithHolderInfo(false))
	f.Cleanup(func() { other.Close(); bare.Close(); bareOther.Close() })
	f.Fuzz(func(t *testing.T, a, b string, ka, kb, data, at uint8, ttl bool, oa, ob, label string, flags uint8) {
		if b == "" {
			b = a // one name: the likeliest place for two owners to meet
		}
		if a == "" || len(a) > maxFuzzName || len(b) > maxFuzzName ||
			len(oa) > maxFuzzName || len(ob) > maxFuzzName || len(label) > 2*maxFuzzName {
			t.Skip()
		}
		oa, ob = fuzzOwner(oa), fuzzOwner(ob)
		if ob == oa && ob != "" {
			ob += "'" // two owners: a shared owner's holds nest by design
		}
		for _, info := range []bool{true, false} {
			t.Logf("holder info %v", info) // shown with a failure: the run it failed in
			keyspaceCase(t, e, info, a, b, ka, kb, data, at, ttl, oa, ob, label, flags, other, bare, bareOther)
		}
	})
}

// keyspaceCase is one run of FuzzKeyspace's input on Clients that record
// holder info (a's labelled, b's other) or on Clients that record none
// (bare, bareOther).
func keyspaceCase(t *testing.T, e *env, info bool, a, b string, ka, kb, data, at uint8, ttl bool, oa, ob, label string,
	flags uint8, other, bare, bareOther *redisync.Client) {
	t.Helper()
	e.do(t, "FLUSHALL")
	ca, cb := bare, bareOther
	if info {
		ca, label = labelled(t, e, label)
		cb = other
	}
	sa, sb := spec{owner: oa, redisson: flags&1 != 0}, spec{owner: ob, redisson: flags&2 != 0}
	ha := newHandleWith(ca, kind(ka%uint8(nKinds)), a, sa)
	hb := newHandleWith(cb, kind(kb%uint8(nKinds)), b, sb)

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
	if cmd != nil && typeOf(cmd) == redissonType(planted) {
		// Documented exemption: Redisson's fair-lock queue keys carry
		// no expiry and no mark; a key of their type under their name
		// (which no lock may take) is taken as Redisson's queue.
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
		if err != nil && !errors.Is(err, errWrongKind) && !errors.Is(err, redisync.ErrInvalidName) && !errors.Is(err, errInvalidOwner) {
			t.Fatalf("%s: %v (planted %q)%s", what, err, planted, e.describe(t))
		}
	}
	// try makes h's attempt; a refused owner id must change nothing.
	try := func(what string, h *handle, sp spec) (bool, error) {
		t.Helper()
		var before map[string]keyState
		if sp.owner != "" {
			before = e.snapshot(t)
		}
		ok, err := h.try(bg())
		answer(what, err)
		if errors.Is(err, errInvalidOwner) {
			if sp.owner == "" || !lockKind(h.kind) {
				t.Fatalf("%s: ErrInvalidOwner without an owner id: %v", what, err)
			}
			if d := diff(before, e.snapshot(t)); d != "" {
				t.Fatalf("%s: owner id %q refused after writing: %s", what, sp.owner, d)
			}
		}
		return ok, err
	}

	okA, _ := try("a try", ha, sa)
	okB, err := try("b try", hb, sb)
	refusedB := errors.Is(err, redisync.ErrInvalidName) || errors.Is(err, errInvalidOwner)
	switch {
	case a != b:
		// b alone: granted unless its name or owner id is refused or
		// it meets the planted value on a key of its own.
		mine := planted != "" && contains(hb.keys, planted)
		if !okB && !mine && !refusedB {
			t.Fatalf("distinct names interfere: %v %q then %v %q: b got %v, %v%s", ha.kind, a, hb.kind, b, okB, err, e.describe(t))
		}
	case okA && okB && !shares(ha.kind, hb.kind):
		t.Fatalf("one name, both held: %v and %v on %q (owners %q, %q)%s", ha.kind, hb.kind, a, ha.owner, hb.owner, e.describe(t))
	case okA && lockKind(ha.kind) && lockKind(hb.kind) && err != nil && !refusedB && !contains(hb.keys, planted):
		t.Fatalf("one name: %v %q (owner %q) holds, and %v (owner %q) is told %v, not busy%s",
			ha.kind, a, ha.owner, hb.kind, hb.owner, err, e.describe(t))
	}
	if info && okA && lockKind(ha.kind) && ha.holders != nil && !contains(ha.keys, planted) {
		recordNow(t, ca, ha)
		checkLabel(t, ha, label)
	}
	// Inspection answers what is no lock of its kind with the typed
	// wrong-kind error too, never Redis's raw WRONGTYPE.
	answer("a inspect", ha.inspect(bg()))
	answer("b inspect", hb.inspect(bg()))
	// Distinct names: a's release leaves every key of b's hold as it
	// was (no two holds share a key, whatever their owner ids).
	var bKeys map[string]keyState
	if okA && okB && a != b {
		bKeys = map[string]keyState{}
		for _, k := range hb.keys {
			bKeys[k] = e.state(t, k)
		}
	}
	if okA {
		if err := ha.release(bg()); err != nil {
			t.Fatalf("a release: %v%s", err, e.describe(t))
		}
	}
	for k, was := range bKeys {
		if now := e.state(t, k); now != was {
			t.Fatalf("%v %q (owner %q)'s release changed %q of %v %q (owner %q): %v -> %v%s",
				ha.kind, a, ha.owner, k, hb.kind, b, hb.owner, was, now, e.describe(t))
		}
	}
	if okB {
		if err := hb.release(bg()); err != nil {
			t.Fatalf("b release: %v%s", err, e.describe(t))
		}
	}
	for _, h := range []*handle{ha, hb} {
		if held := h == ha && okA || h == hb && okB; held && lockKind(h.kind) && h.name != planted {
			if n, _ := e.do(t, "EXISTS", h.name).AsInt64(); n != 0 {
				t.Fatalf("%v %q (owner %q): the lock is left after its release%s", h.kind, h.name, h.owner, e.describe(t))
			}
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
}

// ownerAtoms are the strings an owner id meets in Redis: the lock hash's
// own fields, the read-write lock's field and key marks, the separators of
// its read-hold keys, Redisson's owner id shape. The scripts compare with
// them in Lua, where the fuzzer's coverage cannot see, so fuzzOwner lets one
// byte of input reach each.
var ownerAtoms = []string{"redisync:", "redisync:token", "redisync:latch:", "mode", ":write", ":rwlock_timeout:",
	":", "7", "550e8400-e29b-41d4-a716-446655440000:1", "{", "}", "read", "write"}

// fuzzOwner expands an owner id of the fuzzer's: a first byte c below 0x20
// stands for atom c/2, put before (c even) or after (c odd) the rest, which
// is expanded again, so atoms combine ("\x06" is "mode", "\x07\x06" is
// "mode" twice, "x\x09" is itself); any other id is itself.
func fuzzOwner(id string) string {
	if id == "" || id[0] >= 0x20 {
		return id
	}
	atom, rest := ownerAtoms[int(id[0]/2)%len(ownerAtoms)], fuzzOwner(id[1:])
	if id[0]%2 == 0 {
		return atom + rest
	}
	return rest + atom
}

// lockKind reports whether k is a lock kind that takes an owner id and
// shares the lock hash's layout (rlock, fairlock, rwlock).
func lockKind(k kind) bool { return k == kRLock || k == kFair || k == kRead || k == kWrite }

// labelled returns a Client with holder label label (the package's own when
// label is ""), and the label it records. A label CheckLabel refuses makes
// redisync.New panic, naming it; the Client is then the package's.
func labelled(t *testing.T, e *env, label string) (*redisync.Client, string) {
	t.Helper()
	if label == "" {
		return e.c, ""
	}
	if err := redisync.CheckLabel(label); err != nil {
		if !errors.Is(err, redisync.ErrBadLabel) {
			t.Fatalf("CheckLabel(%q): %v is not ErrBadLabel", label, err)
		}
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "WithLabel") {
					t.Fatalf("New with label %q CheckLabel refuses: panic %v", label, r)
				}
			}()
			redisync.New(e.rc, redisync.WithLabel(label)).Close()
		}()
		return e.c, ""
	}
	c := redisync.New(e.rc, redisync.WithLabel(label))
	t.Cleanup(func() { c.Close() })
	return c, label
}

// recordNow writes h's holder record as its first renewal would (a third
// of the lease after the grant; the fuzz target does not wait for it): the
// script the renewal sends, with c's payload, so that checkLabel reads
// what the record of a longer hold holds.
func recordNow(t *testing.T, c *redisync.Client, h *handle) {
	t.Helper()
	info, _ := keys.Derived(keys.HolderInfoPrefix, h.name)
	field := h.owner
	if h.mode == "write" {
		field += ":write"
	}
	rc := engine.FromClient(c).RC
	payload := engine.FromClient(c).Config.HolderInfo
	rec := func(int) scripts.Record { return scripts.Record{Info: info, Field: field, Lock: h.name} }
	res := rc.Do(bg(), scripts.HolderRecordEval(rc, payload, "60000", 1, rec))
	if err := res.Error(); err != nil {
		t.Fatalf("%v %q: holder record: %v", h.kind, h.name, err)
	}
}

// checkLabel fails unless h's hold shows label, byte for byte, among its
// lock's holders.
func checkLabel(t *testing.T, h *handle, label string) {
	t.Helper()
	hs, err := h.holders(bg())
	if err != nil {
		t.Fatalf("%v %q holders: %v", h.kind, h.name, err)
	}
	for _, x := range hs {
		if x.Owner == h.owner && x.Mode == h.mode {
			if x.Info == nil || x.Info.Label != label {
				t.Fatalf("%v %q: holder %q shows info %+v, want label %q", h.kind, h.name, h.owner, x.Info, label)
			}
			return
		}
	}
	t.Fatalf("%v %q: holder %q (mode %q) not among %+v", h.kind, h.name, h.owner, h.mode, hs)
}

// typeOf is the Redis type a dataTypes command creates.
func typeOf(cmd []string) string {
	return map[string]string{"SET": "string", "RPUSH": "list", "SADD": "set", "ZADD": "zset", "HSET": "hash", "XADD": "stream"}[cmd[0]]
}

// redissonType is the type of Redisson's fair-lock queue key k, "" when k
// is none.
func redissonType(k string) string {
	switch {
	case strings.HasPrefix(k, keys.FairRedissonQueuePrefix+":"):
		return "list"
	case strings.HasPrefix(k, keys.FairRedissonTimeoutPrefix+":"):
		return "zset"
	}
	return ""
}

// ourType is the type of our derived key k ("" for a lock's own key).
func ourType(k string) string {
	for prefix, typ := range map[string]string{
		keys.FairQueuePrefix: "zset", keys.FairHeartbeatPrefix: "zset", keys.RWWritersPrefix: "zset",
		keys.SemHoldersPrefix: "zset", keys.SemQueuePrefix: "zset", keys.SemHeartbeatPrefix: "zset",
		keys.SemPermitsPrefix: "hash", keys.LockTokenPrefix: "string", keys.RedlockTokenPrefix: "string",
		keys.HolderInfoPrefix: "hash", keys.RWTokenPrefix: "string", keys.RatePrefix: "string",
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
