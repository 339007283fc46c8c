package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/redisynctest"
)

// Five requests a minute per user, in bursts of up to three: every process
// that makes this limiter shares each user's schedule.
func Example() {
	// A throw-away redis-server for the example; a program dials its own Redis.
	srv, err := redisynctest.StartServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	c := redisync.New(rc)
	defer c.Close()
	ctx := context.Background()

	lim := ratelimit.New(c, "api", ratelimit.PerMinute(5), 3)
	for i := 1; i <= 4; i++ {
		res, err := lim.Allow(ctx, "user:42")
		if err != nil {
			panic(err) // Redis could not tell: fail open or closed, as the service needs
		}
		if res.Allowed == 0 {
			fmt.Printf("request %d: denied, retry in about %v\n", i, res.RetryAfter.Round(time.Second))
			continue
		}
		fmt.Printf("request %d: allowed, %d left in the burst\n", i, res.Remaining)
	}
	// Output:
	// request 1: allowed, 2 left in the burst
	// request 2: allowed, 1 left in the burst
	// request 3: allowed, 0 left in the burst
	// request 4: denied, retry in about 12s
}
