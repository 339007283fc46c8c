package ratelimit

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/locktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	setup      = locktest.Setup
	eventually = locktest.Eventually
	bg         = locktest.Bg
)
