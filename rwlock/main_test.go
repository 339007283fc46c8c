package rwlock

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
