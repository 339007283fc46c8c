package multilock

import (
	"testing"

	"github.com/redisync/redisync/internal/locktest"
)

// exampleAddr is a server shared by the Examples (they cannot start their own).
var exampleAddr string

func TestMain(m *testing.M) {
	locktest.Main(m, func(addr string) { exampleAddr = addr })
}

var (
	setup = locktest.Setup
	bg    = locktest.Bg
)
