package ratelimit

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/locktest"
)

// TestMain fails the run if goroutines leaked. A Cluster client's topology
// refresh may still sleep in rueidis after the test closed it: rueidis's
// own, and gone seconds later.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

var (
	setup      = locktest.Setup
	eventually = locktest.Eventually
	bg         = locktest.Bg
)
