package semaphore

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

// holderKeysGone reports whether every key but the configuration hash is gone.
func holderKeysGone(t *testing.T, e *locktest.Env, s *Semaphore) bool {
	t.Helper()
	for _, k := range []string{s.keys.Holders, s.keys.Permits, s.keys.Queue, s.keys.Heartbeats} {
		if e.Exists(t, k) {
			return false
		}
	}
	return true
}
