package latch_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/redisynctest"
)

// A coordinator waits for three shards, each of which may run in another
// process (or in Java, on Redisson's RCountDownLatch of the same name).
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

	done := latch.New(c, "batch:42:shards")
	if _, err := done.TrySetCount(ctx, 3); err != nil { // before any shard can finish
		panic(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// ... process a shard ...
			if err := latch.New(c, "batch:42:shards").CountDown(ctx); err != nil {
				panic(err)
			}
		}()
	}
	if err := done.Await(ctx); err != nil {
		panic(err)
	}
	n, _ := done.Count(ctx)
	fmt.Println("every shard done; count:", n)
	wg.Wait()
	// Output:
	// every shard done; count: 0
}
