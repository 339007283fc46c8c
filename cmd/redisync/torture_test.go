package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/locktest"
)

// Scripts that still call `redisync torture` learn where the harness went,
// in one line, with a usage status; nothing runs.
func TestTortureSaysWhereTheHarnessWent(t *testing.T) {
	e := locktest.Setup(t)
	for _, args := range [][]string{{"torture"}, {"torture", "--help"}, {"torture", "--scenario", "crash", "--duration", "1h"}} {
		r := cli(t, e, "", args...)
		assert.Equal(t, exitUsage, r.code, "%v", args)
		assert.Equal(t, "redisync torture: "+tortureMoved+"\n", r.stderr, "%v", args)
		assert.Empty(t, r.stdout, "%v", args)
	}
	r := cli(t, e, "", "--help")
	assert.Contains(t, r.stdout, "redisync-torture")
	assert.Zero(t, e.DBSize(t))
}
