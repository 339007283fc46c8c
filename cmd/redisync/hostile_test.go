package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
)

// Another client overwrites the holder-info key with a string: the lock
// still works for run (it takes, runs, releases), the key is left as it
// was, and inspect says why no records are shown instead of showing none
// silently.
func TestForeignHolderInfoKeyCostsRunNothingAndInspectSaysSo(t *testing.T) {
	e := locktest.Setup(t)
	side, _ := keys.Derived(keys.HolderInfoPrefix, "job:side")
	e.Do(t, "SET", side, "someone else's \x1b[2K")

	r := cli(t, e, "", "run", "--label", "nightly", "job:side", "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.False(t, e.Exists(t, "job:side"), "released")
	v, err := e.Do(t, "GET", side).ToString()
	require.NoError(t, err)
	assert.Equal(t, "someone else's \x1b[2K", v)
	assert.Equal(t, int64(-1), e.PTTL(t, side))

	m := rlock.New(e.C, "job:side")
	require.NoError(t, m.Lock(locktest.Bg()))
	defer func() { require.NoError(t, m.Unlock(locktest.Bg())) }()
	r = cli(t, e, "", "inspect", "job:side")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, m.Owner())
	assert.Contains(t, r.stdout, "note")
	assert.Contains(t, r.stdout, side+" holds a string the library never writes there")
	r = cli(t, e, "", "inspect", "--json", "job:side")
	require.Equal(t, 0, r.code, r.stderr)
	var got inspection
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.Contains(t, got.Note, "holds a string")
	require.Len(t, got.Holders, 1)
	assert.Nil(t, got.Holders[0].Info)
}

// fail's one line obeys nothing, whatever its arguments carry (a server's
// error text, say), and text that printable already escaped stays as it
// was.
func TestFailShowsControlCharactersOfAnyMessage(t *testing.T) {
	var b bytes.Buffer
	fail(&b, "run", exitError, "%s: %v", printable("a\x1bb"), "server said \r\x1b]0;x\x07\nsecond line\u202e\xff")
	out := b.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), "%q", out)
	for _, raw := range []string{"\x1b", "\r", "\x07", "\u202e", "\xff"} {
		assert.NotContains(t, strings.TrimSuffix(out, "\n"), raw)
	}
	assert.Equal(t, `redisync run: a\x1bb: server said \r\x1b]0;x\x07\nsecond line\u202e\xff`+"\n", out)
}

// An operator whose ACL covers the locks but not the holder-info keys
// still inspects them: the holders are shown, and a note says why their
// records are not (inspect failed with NOPERM).
func TestInspectWithoutAccessToTheSideKeyShowsTheHolders(t *testing.T) {
	e := locktest.Setup(t)
	m := rlock.New(e.C, "acl:job")
	require.NoError(t, m.Lock(locktest.Bg()))
	defer func() { require.NoError(t, m.Unlock(locktest.Bg())) }()
	e.Do(t, "ACL", "SETUSER", "ops", "reset", "on", ">pw", "~acl:*", "~redisync_fair*", "~redisync_sem*", "~redisync_rwlock*", "+@all")
	r := cli(t, e, "", "inspect", "--redis", "redis://ops:pw@"+e.Srv.Addr(), "acl:job")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, m.Owner())
	assert.Contains(t, r.stdout, "holder records not shown")
	assert.Contains(t, r.stdout, "NOPERM")
	assert.NotContains(t, r.stdout, "pw@")
}

// ... and force-unlocks them (it failed with NOPERM).
func TestUnlockForceWithoutAccessToTheSideKey(t *testing.T) {
	e := locktest.Setup(t)
	m := rlock.New(e.C, "acl:stuck")
	require.NoError(t, m.Lock(locktest.Bg()))
	e.Do(t, "ACL", "SETUSER", "ops", "reset", "on", ">pw", "~acl:*", "~redisync_lock_token:*", "~redisync_fair_*", "~redisync_sem_*",
		"~redisync_rwlock_*", "~redisson*", "&*", "+@all")
	r := cli(t, e, "", "unlock", "--force", "--yes", "--redis", "redis://ops:pw@"+e.Srv.Addr(), "acl:stuck")
	require.Equal(t, 0, r.code, r.stderr)
	assert.False(t, e.Exists(t, "acl:stuck"))
}
