package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/locktest"
)

// Issue 13, defect 2: inspect showed a user's hash as a lock whose holders
// were its field names, and unlock --force deleted it. Both now say it is
// no lock and leave it byte-identical.
func TestInspectAndForceUnlockLeaveADataHashAlone(t *testing.T) {
	e := locktest.Setup(t)
	e.Do(t, "HSET", "orders:42", "name", "Ann", "email", "ann@example.com")
	dump := func() string { s, _ := e.Do(t, "DUMP", "orders:42").ToString(); return s }
	before := dump()
	r := cli(t, e, "", "inspect", "orders:42")
	assert.NotEqual(t, 0, r.code, r.stdout)
	assert.NotContains(t, r.stdout, "email", "field names shown as holders")
	assert.Contains(t, r.stderr, "no redisync lock")
	r = cli(t, e, "", "unlock", "--force", "--yes", "orders:42")
	assert.NotEqual(t, 0, r.code, r.stdout)
	assert.Equal(t, before, dump(), "unlock --force changed the data hash")
}
