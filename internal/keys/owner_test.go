package keys

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestReservedOwnerRefusesFieldsOfOurs(t *testing.T) {
	for _, id := range []string{"", "redisync:token", "redisync:latch:1", "redisync:", "mode", "x:write", ":write",
		"550e8400-e29b-41d4-a716-446655440000:1:write"} {
		assert.NotEmpty(t, ReservedOwner(id, false), "%q", id)
		assert.NotEmpty(t, ReservedOwner(id, true), "%q", id)
	}
	// Owner ids the lock hashes take as they are, Redisson's among them.
	for _, id := range []string{"job-7", "job:7", "7", "a:b:c", "redisync", "Mode", "modes", "x:writer", "{x}", " ",
		"550e8400-e29b-41d4-a716-446655440000:1", "node-client:t1"} {
		assert.Empty(t, ReservedOwner(id, false), "%q", id)
	}
	// A read-write lock's: one part, not all digits, or "<part>:<digits>".
	for _, id := range []string{"job-7", "job:7", "550e8400-e29b-41d4-a716-446655440000:1", "{x}", "x7", "a:007"} {
		assert.Empty(t, ReservedOwner(id, true), "%q", id)
	}
	for _, id := range []string{"7", "007", "a:b:c", "a:b", ":7", "a:", "a:7:", "a:7x", "y:rwlock_timeout:1", "node-client:t1"} {
		assert.NotEmpty(t, ReservedOwner(id, true), "%q", id)
	}
}

// readHoldKey is the key of read hold n of owner on the lock named name
// (Redisson's layout; rwlock.New builds it so).
func readHoldKey(name, owner string, n int) string {
	return Tagged(name) + ":" + owner + ":rwlock_timeout:" + string(rune('0'+n))
}

// TestReadHoldKeysOfAcceptedOwnersNeverMeet: two read holds share a key only
// when their names share the read-hold base (documented: "x" and "{x}", as in
// Redisson) and their owners are one, whatever the names; and no read-hold
// key can be a lock's name.
func TestReadHoldKeysOfAcceptedOwnersNeverMeet(t *testing.T) {
	// Names and owners of the pieces that make keys meet, so that a
	// collision, if the rule let one through, is found in a few draws.
	pieces := func(ps ...string) *rapid.Generator[string] {
		return rapid.Custom(func(t *rapid.T) string {
			return strings.Join(rapid.SliceOfN(rapid.SampledFrom(ps), 1, 4).Draw(t, "pieces"), "")
		})
	}
	lockNames := pieces("{x}", "x", ":", "7", "}", "{")
	owners := pieces("x", ":", "7", "u").Filter(func(id string) bool { return ReservedOwner(id, true) == "" })
	rapid.Check(t, func(t *rapid.T) {
		a, b := lockNames.Draw(t, "a"), lockNames.Draw(t, "b")
		oa, ob := owners.Draw(t, "oa"), owners.Draw(t, "ob")
		na, nb := rapid.IntRange(1, 2).Draw(t, "na"), rapid.IntRange(1, 2).Draw(t, "nb")
		var colons []int
		for i := range len(oa) {
			if oa[i] == ':' {
				colons = append(colons, i)
			}
		}
		if len(colons) > 0 && rapid.Bool().Draw(t, "split") {
			// The pair that would meet a's read hold if the rule let its
			// owner through: a's owner cut at a colon, the head moved into
			// the name ("{t}" and "u:7", "{t}:u" and "7").
			i := rapid.SampledFrom(colons).Draw(t, "at")
			b, ob, nb = a+":"+oa[:i], oa[i+1:], na
			if ReservedOwner(ob, true) != "" {
				return
			}
		}
		ka, kb := readHoldKey(a, oa, na), readHoldKey(b, ob, nb)
		if ka == kb && (Tagged(a) != Tagged(b) || oa != ob || na != nb) {
			t.Fatalf("read hold %d of %q on %q and read hold %d of %q on %q share key %q", na, oa, a, nb, ob, b, ka)
		}
		if Reserved(ka) == "" {
			t.Fatalf("read-hold key %q is not reserved: a lock could be named after it", ka)
		}
	})
}

// scriptField finds the field arguments of the hash commands in a script
// line: redis.call('hget', key, 'mode'), and every other argument of an
// HSET from its first.
var hashCall = regexp.MustCompile(`redis\.p?call\('(hget|hset|hsetnx|hexists|hincrby|hdel)', ([^)]*)\)`)

var literal = regexp.MustCompile(`^'([^']*)'$`)

// TestEveryFieldTheLockScriptsNameIsRefusedAsAnOwnerID reads every script
// for the literal hash fields it reads or writes: each is refused as an
// owner id, or lives in a hash that holds no owner fields (the semaphore's
// configuration, "capacity" and "token", and its permits, "used", whose
// other fields are permit ids the library draws). A new field of a lock's
// hash fails here until ReservedOwner refuses it.
func TestEveryFieldTheLockScriptsNameIsRefusedAsAnOwnerID(t *testing.T) {
	noOwners := map[string]bool{"capacity": true, "token": true, "used": true}
	files, err := filepath.Glob("../scripts/*.lua")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	found := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range hashCall.FindAllStringSubmatch(string(src), -1) {
			args := strings.Split(m[2], ", ")
			fields := args[1:2]
			if m[1] == "hset" {
				fields = nil
				for i := 1; i < len(args); i += 2 {
					fields = append(fields, args[i])
				}
			}
			for _, a := range fields {
				if lit := literal.FindStringSubmatch(strings.TrimSpace(a)); lit != nil {
					found[lit[1]] = true
				}
			}
		}
	}
	require.Contains(t, found, "mode", "the scan finds the fields (%v)", found)
	require.Contains(t, found, "redisync:token", "the scan finds the fields (%v)", found)
	for f := range found {
		if noOwners[f] {
			continue
		}
		assert.NotEmpty(t, ReservedOwner(f, false), "the scripts keep field %q beside owner fields, but it is accepted as an owner id", f)
	}
}
