package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/locktest"
)

// An operator with read-only key access (%R~*) inspects a held lock and
// sees who holds it: inspect only reads (its holder-record read, a no-writes
// script, goes as EVALSHA_RO: as EVALSHA, whose keys Redis declares
// read-write, it showed "holder records not shown: ... NOPERM").
func TestInspectWithReadOnlyKeyACLShowsHolderRecords(t *testing.T) {
	e := locktest.Setup(t)
	startRun(t, e, "roacl:job", "--label", "ro-label")
	e.Do(t, "ACL", "SETUSER", "viewer", "reset", "on", ">pw", "%R~*", "+@all")
	r := cli(t, e, "", "inspect", "--redis", "redis://viewer:pw@"+e.Srv.Addr(), "roacl:job")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "ro-label")
	assert.NotContains(t, r.stdout, "NOPERM")
}
