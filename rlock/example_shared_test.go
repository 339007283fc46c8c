package rlock_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rlock"
)

// One handle shared by goroutines works like a sync.Mutex: they take turns.
// Re-entry is asked for with WithReentrant.
func ExampleMutex_shared() {
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

	mu := rlock.New(c, "stock:17") // shared by the goroutines below
	count := 0
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 10 {
				if err := mu.Lock(ctx); err != nil {
					panic(err)
				}
				count++ // only one goroutine at a time gets here
				if err := mu.Unlock(ctx); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	fmt.Println("count:", count)

	r := rlock.New(c, "stock:17", rlock.WithReentrant())
	_ = r.Lock(ctx)
	_ = r.Lock(ctx) // nests
	n, _ := r.HoldCount(ctx)
	fmt.Println("reentrant holds:", n)
	_ = r.Unlock(ctx)
	_ = r.Unlock(ctx)
	// Output:
	// count: 30
	// reentrant holds: 2
}
