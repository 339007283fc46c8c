package multilock

import (
	"testing"

	"github.com/redisync/redisync/internal/locktest"
)

func TestMain(m *testing.M) {
	locktest.Main(m)
}

var (
	setup = locktest.Setup
	bg    = locktest.Bg
)
