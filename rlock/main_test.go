package rlock

import (
	"testing"

	"github.com/redis/rueidis"

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

func rueidisNil(err error) bool { return rueidis.IsRedisNil(err) }
