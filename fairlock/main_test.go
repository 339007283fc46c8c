package fairlock

import (
	"testing"

	"github.com/redisync/redisync/internal/locktest"
)

func TestMain(m *testing.M) {
	locktest.Main(m)
}

var (
	setup      = locktest.Setup
	eventually = locktest.Eventually
	eng        = locktest.Engine
	bg         = locktest.Bg
)

// queueLen is the number of owners in name's queue, read from Redis.
func queueLen(t *testing.T, e *locktest.Env, m *Mutex) int {
	t.Helper()
	return int(e.Int(t, "ZCARD", m.keys.Queue))
}
